package mcp

import (
	"testing"

	"github.com/restarea/restarea/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
