package mcp

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/restarea/restarea"
)

// Defaults applied by NewServer and NewHandler to zero Config members.
const (
	// DefaultMaxBodyBytes fits the largest valid post_entry call: the
	// largest post in its largest encoding (restarea.MaxPostJSONBytes, the
	// REST API's cap) inside a JSON-RPC tools/call envelope.
	DefaultMaxBodyBytes = restarea.MaxPostJSONBytes + envelopeBytes
	DefaultCallTimeout  = 30 * time.Second

	// envelopeBytes bounds the JSON-RPC request around the arguments
	// ({"jsonrpc","id","method":"tools/call","params":{"name","_meta"}}).
	envelopeBytes = 4096
)

// Config configures the MCP endpoint of a node.
type Config struct {
	// Service answers every tool call; NewHandler requires it.
	Service restarea.Service
	// Search answers search_entries; nil makes it answer 503 unavailable.
	Search restarea.SearchService
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// deciding a post's source (httpx.ClientAddr). The source never comes
	// from anything else a client sends.
	TrustedProxies []netip.Prefix
	// IPv6SourceBits is the prefix length an IPv6 client is counted by
	// (httpx.SourceKey); 0 means httpx.DefaultIPv6SourceBits (a /64).
	IPv6SourceBits int
	// AllowedOrigins are exact origins (e.g. "https://example.org")
	// accepted besides those naming the request's own host.
	AllowedOrigins []string
	// Logger receives warnings and errors; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes caps one HTTP request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// CallTimeout bounds one tool call (and the reading of its request
	// body); 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// Version is reported as the server version in the MCP handshake.
	Version string
}

// withDefaults returns c with every zero member that has a default set.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}
