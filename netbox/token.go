package netbox

import (
	"io"
	"os"
	"strings"
	"sync"
)

// maxTokenFileSize: a token is ~50 bytes; refuse to slurp a wrongly mounted file.
const maxTokenFileSize = 4096

// tokenSource reads the token file on every request so that a rotated Secret
// (kubelet swaps the mounted file) is used at once; reading a tiny file costs
// far less than the HTTP call it authorises. The last good token is kept for a
// transient read failure.
type tokenSource struct {
	path string

	mu       sync.Mutex
	lastGood string
}

func (t *tokenSource) token() (string, error) {
	tok, err := readToken(t.path)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.lastGood != "" {
			return t.lastGood, nil
		}
		return "", err
	}
	t.lastGood = tok
	return tok, nil
}

// current returns the last token read, for redacting error texts.
func (t *tokenSource) current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastGood
}

func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", configErr("%s cannot be read", EnvTokenFile)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxTokenFileSize+1))
	if err != nil {
		return "", configErr("%s cannot be read", EnvTokenFile)
	}
	if len(buf) > maxTokenFileSize {
		return "", configErr("%s is too large to be an API token", EnvTokenFile)
	}
	tok := strings.TrimSpace(string(buf))
	if tok == "" {
		return "", configErr("%s is empty", EnvTokenFile)
	}
	for _, r := range tok {
		// Printable ASCII without spaces: anything else would corrupt the header.
		if r <= ' ' || r > '~' {
			return "", configErr("%s holds characters that cannot be an API token", EnvTokenFile)
		}
	}
	return tok, nil
}

// authorization renders the header NetBox expects: v2 tokens ("nbt_<key>.<secret>")
// as Bearer, legacy v1 tokens as Token.
func authorization(tok string) string {
	if strings.HasPrefix(tok, "nbt_") {
		return "Bearer " + tok
	}
	return "Token " + tok
}
