package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podRun is what the kubelet would run for one pod of the StatefulSet,
// translated to docker: the container's args and environment with the
// downward API and Secret values filled in, its user, its read-only root
// filesystem, its dropped capabilities and its grace period.
type podRun struct {
	name            string // restarea-0
	hostname        string // the pod's hostname: its name
	dnsName         string // restarea-0.restarea-peers.NAMESPACE.svc.cluster.local
	args            []string
	env             []string // NAME=value, in the manifest's order
	user            string   // uid:gid
	readOnly        bool
	capDrop         []string
	noNewPrivileges bool
	dataMount       string // where the PVC template's volume is mounted
	secretDirs      []secretDir
	binds           []string // host:container:ro of each secretDir, written by the simulation
	httpPort        int      // the container port named http
	grace           int      // terminationGracePeriodSeconds
}

// secretDir is a volume of the generated Secret as the kubelet mounts it:
// one file per key (or per item listed), read-only.
type secretDir struct {
	mountPath string
	files     map[string]string // file name → content
}

// podFor derives pod ordinal's run from the decoded StatefulSet, as the
// kubelet would for namespace, with secret holding the generated Secret's
// data.
func podFor(b *base, ordinal int, namespace string, secret map[string]string) (podRun, error) {
	s, c := b.sts, b.container
	spec := s.Spec.Template.Spec
	name := fmt.Sprintf("%s-%d", s.Name, ordinal)
	p := podRun{
		name:     name,
		hostname: name,
		dnsName:  fmt.Sprintf("%s.%s.%s.svc.cluster.local", name, s.Spec.ServiceName, namespace),
	}
	if len(c.Command) > 0 {
		return p, fmt.Errorf("the container overrides the image's entrypoint (%v); the simulation runs the image's", c.Command)
	}

	// Environment: each value may refer to the ones before it.
	vals := map[string]string{}
	var order []string
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = expand(e.Value, vals)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = name
			case "metadata.namespace":
				v = namespace
			default:
				return p, fmt.Errorf("env %s: field %s is not simulated", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != b.kust.SecretGenerator[0].Name {
				return p, fmt.Errorf("env %s: secret %s is not the generated one", e.Name, ref.Name)
			}
			var ok bool
			if v, ok = secret[ref.Key]; !ok {
				return p, fmt.Errorf("env %s: the secret has no key %s", e.Name, ref.Key)
			}
		default:
			return p, fmt.Errorf("env %s: this kind of valueFrom is not simulated", e.Name)
		}
		if _, dup := vals[e.Name]; !dup {
			order = append(order, e.Name)
		}
		vals[e.Name] = v
	}
	if len(c.EnvFrom) > 0 {
		return p, fmt.Errorf("envFrom is not simulated")
	}
	for _, k := range order {
		p.env = append(p.env, k+"="+vals[k])
	}
	for _, a := range c.Args {
		p.args = append(p.args, expand(a, vals))
	}

	// Security: the container's settings win over the pod's.
	var uid, gid *int64
	if psc := spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			uid = csc.RunAsUser
		}
		if csc.RunAsGroup != nil {
			gid = csc.RunAsGroup
		}
		p.readOnly = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
		p.noNewPrivileges = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
		if csc.Capabilities != nil {
			for _, cp := range csc.Capabilities.Drop {
				p.capDrop = append(p.capDrop, string(cp))
			}
		}
	}
	if uid == nil || gid == nil {
		return p, fmt.Errorf("no runAsUser/runAsGroup: the simulation needs the uid the kubelet would use")
	}
	p.user = strconv.FormatInt(*uid, 10) + ":" + strconv.FormatInt(*gid, 10)

	claim := s.Spec.VolumeClaimTemplates[0].Name
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		if m.Name == claim {
			p.dataMount = m.MountPath
			continue
		}
		d, err := secretFiles(b, vols[m.Name], secret)
		if err != nil {
			return p, fmt.Errorf("volume %s: %v", m.Name, err)
		}
		if !m.ReadOnly {
			return p, fmt.Errorf("volume %s: a Secret is mounted read-only", m.Name)
		}
		d.mountPath = m.MountPath
		p.secretDirs = append(p.secretDirs, d)
	}
	if p.dataMount == "" {
		return p, fmt.Errorf("volume %s is not mounted", claim)
	}
	for _, cp := range c.Ports {
		if cp.Name == "http" {
			p.httpPort = int(cp.ContainerPort)
		}
	}
	if p.httpPort == 0 {
		return p, fmt.Errorf("no container port named http")
	}
	p.grace = int(corev1.DefaultTerminationGracePeriodSeconds)
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		p.grace = int(*g)
	}
	return p, nil
}

// secretFiles returns the files of a volume of the generated Secret, the
// only kind of volume besides the data claim the simulation mounts.
func secretFiles(b *base, v corev1.Volume, secret map[string]string) (secretDir, error) {
	if v.Secret == nil {
		return secretDir{}, fmt.Errorf("only the data claim and Secret volumes are simulated")
	}
	if v.Secret.SecretName != b.kust.SecretGenerator[0].Name {
		return secretDir{}, fmt.Errorf("secret %s is not the generated one", v.Secret.SecretName)
	}
	d := secretDir{files: map[string]string{}}
	if len(v.Secret.Items) == 0 {
		// Every key is a file; the node reads the ones the README has
		// the user write.
		for _, k := range secretKeys {
			if _, ok := secret[k]; !ok {
				return secretDir{}, fmt.Errorf("the secret has no key %s", k)
			}
		}
		maps.Copy(d.files, secret)
		return d, nil
	}
	for _, it := range v.Secret.Items {
		val, ok := secret[it.Key]
		if !ok {
			return secretDir{}, fmt.Errorf("the secret has no key %s", it.Key)
		}
		d.files[it.Path] = val
	}
	return d, nil
}

// expand replaces $(NAME) with vals[NAME] as Kubernetes does in env values
// and args: $$ is a literal $, and a reference to an unknown name stays as
// written.
func expand(s string, vals map[string]string) string {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			out.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			out.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vals[name]; ok {
					out.WriteString(v)
					i += 2 + end
					continue
				}
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

// envNames lists the variable names of a pod's environment, for the log
// (values are secret).
func (p podRun) envNames() []string {
	names := map[string]bool{}
	for _, kv := range p.env {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	return slices.Sorted(maps.Keys(names))
}
