package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/certs"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/transport"
)

func init() {
	register("tls", "create a cluster CA, node certificates for mutual TLS and HTTPS certificates for the public port", runTLS)
}

const tlsUsage = `usage:
  restarea tls ca   [--out DIR] [--lifetime 3650d] [--name NAME] [--force]
  restarea tls node --name NODE --host HOST [--host HOST...] [--ca-dir DIR] [--out DIR] [--lifetime 730d] [--force]
  restarea tls http --name NAME --host HOST [--host HOST...] [--ca-dir DIR | --ca-cert FILE --ca-key FILE]
                    [--out DIR] [--lifetime 730d] [--force]

'tls ca' writes DIR/ca.pem and DIR/ca-key.pem (mode 0600). 'tls node' signs a
certificate for one node with that CA and writes DIR/NODE.pem, DIR/NODE-key.pem
(mode 0600) and a copy of ca.pem: the files of serve's --tls-cert, --tls-key and
--tls-ca. 'tls http' signs a server certificate for the public HTTP port, with
the nodes' CA or another (--ca-cert, --ca-key), and writes DIR/NAME.pem,
DIR/NAME-key.pem and a copy of the CA certificate: serve's --http-tls-cert and
--http-tls-key, and the --ca of clients (restarea admin, post, get) and the
--http-tls-ca of other nodes. Keys are ECDSA P-256; existing files are never
overwritten without --force. Run 'restarea tls COMMAND -h' for the flags.
`

// runTLS dispatches 'tls ca' and 'tls node'. Their flags are not read from
// RESTAREA_* variables: those configure serve, and --name or --out picked
// up from a serve environment would be a surprise.
func runTLS(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, tlsUsage)
		return 2
	}
	switch args[0] {
	case "ca":
		return runTLSCA(args[1:], os.Stdout)
	case "node":
		return runTLSNode(args[1:], os.Stdout)
	case "http":
		return runTLSHTTP(args[1:], os.Stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(os.Stderr, tlsUsage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "restarea tls: unknown command %q\n\n%s", args[0], tlsUsage)
	return 2
}

func runTLSCA(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("tls ca", flag.ContinueOnError)
	dir := fs.String("out", ".", "directory for ca.pem and ca-key.pem (created 0700 if missing)")
	name := fs.String("name", "rest.area cluster CA", "the CA's common name")
	lifetime := fs.String("lifetime", "3650d", "how long the CA is valid (days as 3650d, or a Go duration)")
	force := fs.Bool("force", false, "replace existing files")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "restarea tls ca: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected arguments %q", fs.Args())
	}
	life, err := restarea.ParseDuration(*lifetime)
	if err != nil || life <= 0 {
		return fail(2, "--lifetime %q: want a positive duration such as 3650d", *lifetime)
	}
	ca, err := certs.NewCA(*name, life)
	if err != nil {
		return fail(1, "%v", err)
	}
	certPath, keyPath, err := ca.Save(*dir, *force)
	if err != nil {
		return fail(1, "%s", saveError(err))
	}
	fmt.Fprintf(out, "created CA %q (ECDSA P-256), %s\n", ca.Cert.Subject.CommonName, validity(ca.Cert))
	fmt.Fprintf(out, "  certificate:  %s  (every node's --tls-ca)\n", certPath)
	fmt.Fprintf(out, "  private key:  %s  (mode 0600; keep it off the nodes: 'restarea tls node --ca-dir' signs with it)\n", keyPath)
	fmt.Fprintf(out, "  SHA-256 fingerprint: %s\n", certs.Fingerprint(ca.Cert))
	return 0
}

func runTLSNode(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("tls node", flag.ContinueOnError)
	name := fs.String("name", "", "node name: the certificate's common name and file names NAME.pem, NAME-key.pem (required)")
	var hosts hostList
	fs.Var(&hosts, "host", "DNS name or IP address peers dial this node by; repeat it or separate with commas (at least one; must include the raft advertise host)")
	caDir := fs.String("ca-dir", ".", "directory holding ca.pem and ca-key.pem from 'restarea tls ca'")
	dir := fs.String("out", ".", "directory for the node's files (created 0700 if missing)")
	lifetime := fs.String("lifetime", "730d", "how long the certificate is valid (days as 730d, or a Go duration); at most until the CA expires")
	force := fs.Bool("force", false, "replace existing files (to renew a certificate)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "restarea tls node: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected arguments %q", fs.Args())
	}
	if *name == "" {
		return fail(2, "--name is required")
	}
	if len(hosts) == 0 {
		return fail(2, "give at least one --host (the DNS name or IP other nodes dial this node by)")
	}
	life, err := restarea.ParseDuration(*lifetime)
	if err != nil || life <= 0 {
		return fail(2, "--lifetime %q: want a positive duration such as 730d", *lifetime)
	}
	ca, err := certs.LoadCA(*caDir)
	if err != nil {
		return fail(1, "%v", err)
	}
	n, err := ca.Issue(certs.NodeRequest{Name: *name, Hosts: hosts, Lifetime: life})
	if err != nil {
		return fail(2, "%v", err)
	}
	files, err := n.Save(*dir, *force)
	if err != nil {
		return fail(1, "%s", saveError(err))
	}
	// The files are checked the way serve loads them, so what this command
	// prints as done is what serve accepts.
	if _, err := transport.LoadTLS(files.Cert, files.Key, files.CA); err != nil {
		return fail(1, "the files written do not load: %v", err)
	}
	fmt.Fprintf(out, "created the certificate of %s (ECDSA P-256, server and client auth), signed by %q, %s\n",
		*name, ca.Cert.Subject.CommonName, validity(n.Cert))
	fmt.Fprintf(out, "  hosts: %s\n", sans(n.Cert))
	fmt.Fprintf(out, "  --tls-cert %s\n  --tls-key  %s  (mode 0600)\n  --tls-ca   %s\n", files.Cert, files.Key, files.CA)
	return 0
}

func runTLSHTTP(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("tls http", flag.ContinueOnError)
	name := fs.String("name", "", "certificate name: its common name and file names NAME.pem, NAME-key.pem (required; not a node's name if the files share a directory)")
	var hosts hostList
	fs.Var(&hosts, "host", "DNS name or IP address clients and other nodes reach the public port by; repeat it or separate with commas (at least one; every host of --advertise-url and --public-url served by this certificate)")
	caDir := fs.String("ca-dir", ".", "directory holding ca.pem and ca-key.pem from 'restarea tls ca' (the nodes' CA)")
	caCert := fs.String("ca-cert", "", "another CA's certificate (PEM) to sign with, instead of --ca-dir")
	caKey := fs.String("ca-key", "", "the key of --ca-cert (PEM)")
	dir := fs.String("out", ".", "directory for the certificate's files (created 0700 if missing)")
	lifetime := fs.String("lifetime", "730d", "how long the certificate is valid (days as 730d, or a Go duration); at most until the CA expires")
	force := fs.Bool("force", false, "replace existing files (to renew a certificate; a running node picks the new pair up within 10s)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "restarea tls http: "+format+"\n", a...)
		return code
	}
	caDirSet := false
	fs.Visit(func(f *flag.Flag) { caDirSet = caDirSet || f.Name == "ca-dir" })
	switch {
	case fs.NArg() > 0:
		return fail(2, "unexpected arguments %q", fs.Args())
	case *name == "":
		return fail(2, "--name is required")
	case len(hosts) == 0:
		return fail(2, "give at least one --host (the DNS name or IP address clients reach the public port by)")
	case (*caCert == "") != (*caKey == ""):
		return fail(2, "give --ca-cert and --ca-key together")
	case *caCert != "" && caDirSet:
		return fail(2, "give --ca-dir or --ca-cert with --ca-key, not both")
	}
	life, err := restarea.ParseDuration(*lifetime)
	if err != nil || life <= 0 {
		return fail(2, "--lifetime %q: want a positive duration such as 730d", *lifetime)
	}
	var ca *certs.CA
	if *caCert != "" {
		ca, err = certs.LoadCAFiles(*caCert, *caKey)
	} else {
		ca, err = certs.LoadCA(*caDir)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	c, err := ca.IssueServer(certs.NodeRequest{Name: *name, Hosts: hosts, Lifetime: life})
	if err != nil {
		return fail(2, "%v", err)
	}
	files, err := c.Save(*dir, *force)
	if err != nil {
		return fail(1, "%s", saveError(err))
	}
	// Checked the way serve loads them: what this command reports as done
	// is what serve accepts.
	if _, err := server.LoadHTTPS(files.Cert, files.Key, slog.New(slog.DiscardHandler)); err != nil {
		return fail(1, "the files written do not load: %v", err)
	}
	fmt.Fprintf(out, "created the HTTPS certificate %s (ECDSA P-256, server auth), signed by %q, %s\n",
		*name, ca.Cert.Subject.CommonName, validity(c.Cert))
	fmt.Fprintf(out, "  hosts: %s\n", sans(c.Cert))
	fmt.Fprintf(out, "  serve --http-tls-cert %s\n        --http-tls-key  %s  (mode 0600)\n", files.Cert, files.Key)
	fmt.Fprintf(out, "  CA certificate: %s  (clients' --ca; other nodes' --http-tls-ca)\n", files.CA)
	return 0
}

// hostList collects repeated --host flags.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*h = append(*h, p)
		}
	}
	return nil
}

func saveError(err error) string {
	var exists *certs.ExistsError
	if errors.As(err, &exists) {
		return fmt.Sprintf("refusing to overwrite %s (nothing was written; --force replaces them)", strings.Join(exists.Paths, ", "))
	}
	return err.Error()
}

func validity(c *x509.Certificate) string {
	days := int(c.NotAfter.Sub(c.NotBefore).Round(time.Hour).Hours() / 24)
	return fmt.Sprintf("valid from %s until %s (%d days)", c.NotBefore.UTC().Format("2006-01-02 15:04 MST"),
		c.NotAfter.UTC().Format("2006-01-02 15:04 MST"), days)
}

func sans(c *x509.Certificate) string {
	var s []string
	for _, d := range c.DNSNames {
		s = append(s, "DNS:"+d)
	}
	for _, ip := range c.IPAddresses {
		s = append(s, "IP:"+ip.String())
	}
	return strings.Join(s, ", ")
}
