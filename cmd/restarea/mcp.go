package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea/internal/buildinfo"
	"github.com/restarea/restarea/mcp"
)

func init() {
	register("mcp", "serve the MCP tools on stdio, relayed to a cluster", runMCP)
}

// runMCP serves the rest.area tools on stdin/stdout for agents that only
// speak stdio, forwarding every call to the cluster. stdout carries the
// protocol, so all logging goes to stderr.
func runMCP(args []string) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	servers := fs.String("server", os.Getenv("RESTAREA_SERVER"),
		"comma-separated base URLs of cluster nodes, tried in turn (env RESTAREA_SERVER)")
	verbose := fs.Bool("v", false, "log each unreachable server to stderr")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: restarea mcp --server URL[,URL...]\n\nServes the rest.area MCP tools on stdio, relayed to a running cluster.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var urls []string
	for _, u := range strings.Split(*servers, ",") {
		if u = strings.TrimSpace(u); u != "" {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				fmt.Fprintf(os.Stderr, "restarea mcp: --server %q: want an http:// or https:// URL\n", u)
				return 2
			}
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		fmt.Fprintln(os.Stderr, "restarea mcp: --server (or RESTAREA_SERVER) is required")
		fs.Usage()
		return 2
	}
	level := slog.LevelError
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	relay := mcp.NewRelay(urls, mcp.RelayConfig{Logger: logger, Version: buildinfo.Version()})
	err := relay.Run(ctx, &sdk.StdioTransport{})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		logger.Error("restarea mcp", "err", err)
		return 1
	}
	return 0
}
