package kubeapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RequireIdleConnectionClosed sends one keep-alive GET on a raw connection, reads its answer, and then
// waits for the server to close the connection: it must, not before idle (nor within a minute).
func RequireIdleConnectionClosed(t *testing.T, addr, path string, idle time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: test\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.False(t, resp.Close, "the server kept the connection alive after the answer")
	answered := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = br.ReadByte()
	require.True(t, errors.Is(err, io.EOF), "the server closed the idle connection (got %v)", err)
	assert.GreaterOrEqual(t, time.Since(answered), idle-50*time.Millisecond, "closed for being idle, not before")
}
