package bearer

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

// The rotation rules both clients rely on: a swapped file (kubelet's atomic rename) and an in-place
// rewrite are read at once; a rewrite the stat cannot see is read after Forget; a file that is briefly
// gone or empty leaves the last good token in use; with none ever read, the error says why.
func TestFileFollowsRotationAndKeepsTheLastGoodToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	f := NewFile(path, 64)

	_, err := f.Token()
	require.Error(t, err, "no file, no token ever read")
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
	assert.Equal(t, "TOKEN cannot be read", Describe("TOKEN", err))

	write(t, path, "first\n")
	tok, err := f.Token()
	require.NoError(t, err)
	assert.Equal(t, "first", tok)

	// Swapped by rename: another inode.
	write(t, path+".new", "second")
	require.NoError(t, os.Rename(path+".new", path))
	tok, _ = f.Token()
	assert.Equal(t, "second", tok)

	// Rewritten in place with the same size and mtime: invisible to the stat, read after Forget.
	fi, err := os.Stat(path)
	require.NoError(t, err)
	write(t, path, "third!")
	require.NoError(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
	tok, _ = f.Token()
	assert.Equal(t, "second", tok, "an unchanged stat reuses the token read")
	f.Forget()
	tok, _ = f.Token()
	assert.Equal(t, "third!", tok)

	// Rewritten in place with another size.
	write(t, path, "fourth-token")
	tok, _ = f.Token()
	assert.Equal(t, "fourth-token", tok)

	// Gone or empty for a moment: the last good token carries on; Read (start-up) still says why.
	require.NoError(t, os.Remove(path))
	tok, err = f.Token()
	require.NoError(t, err)
	assert.Equal(t, "fourth-token", tok)
	write(t, path, "  \n")
	tok, err = f.Token()
	require.NoError(t, err)
	assert.Equal(t, "fourth-token", tok)
	_, err = f.Read()
	assert.ErrorIs(t, err, ErrEmpty)
	assert.Equal(t, "fourth-token", f.Last())
}

func TestFileRefusesWhatCannotBeAToken(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		content string
		want    error
	}{
		{"", ErrEmpty},
		{" \t\n", ErrEmpty},
		{strings.Repeat("a", 65), ErrTooLarge},
		{"two words", ErrNotToken},
		{"tök", ErrNotToken},
		{"line\nbreak", ErrNotToken},
	} {
		path := filepath.Join(dir, "t")
		write(t, path, c.content)
		_, err := NewFile(path, 64).Read()
		assert.ErrorIs(t, err, c.want, "%q", c.content)
		assert.Equal(t, "F "+c.want.Error(), Describe("F", err))
	}
	path := filepath.Join(dir, "ok")
	write(t, path, strings.Repeat("a", 64))
	_, err := NewFile(path, 64).Read()
	assert.NoError(t, err, "exactly the limit is a token")
}

func TestRefuseRedirectsSendsNothingToTheTarget(t *testing.T) {
	var leaked bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { leaked = true }))
	defer target.Close()
	origin := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer origin.Close()
	refused := errors.New("refused")
	c := &http.Client{CheckRedirect: RefuseRedirects(refused), Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodGet, origin.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer secret")
	_, err = c.Do(req)
	assert.ErrorIs(t, err, refused)
	assert.False(t, leaked)
}
