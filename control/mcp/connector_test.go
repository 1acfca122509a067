package mcp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/mcp"
)

func TestToolName(t *testing.T) {
	id := "0b0f2c1e-8d2a-4c3b-9e7f-1a2b3c4d5e6f"
	require.Equal(t, "mcp_"+id+"_get-weather_now", mcp.ToolName(id, "get-weather.now"))
	long := mcp.ToolName(id, strings.Repeat("x", 40))
	require.Len(t, long, 64)
	require.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, long)
	require.NotEqual(t, long, mcp.ToolName(id, strings.Repeat("x", 41)), "cut names stay distinct")
	require.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, mcp.ToolName(id, "héllo wörld"))
}
