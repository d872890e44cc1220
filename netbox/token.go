package netbox

import (
	"strings"

	"github.com/o2ims-operator/o2ims-operator/internal/bearer"
)

// maxTokenFileSize: a token is ~50 bytes; refuse to slurp a wrongly mounted file.
const maxTokenFileSize = 4096

// tokenSource is the mounted token file (bearer.File: re-read when it changes or after NetBox refused
// the token, the last good token kept for a transient read failure), its errors worded for NetBox.
type tokenSource struct{ file *bearer.File }

func newTokenSource(path string) *tokenSource {
	return &tokenSource{file: bearer.NewFile(path, maxTokenFileSize)}
}

func (t *tokenSource) token() (string, error) {
	tok, err := t.file.Token()
	if err != nil {
		return "", configErr("%s", bearer.Describe(EnvTokenFile, err))
	}
	return tok, nil
}

// refused: NetBox refused the token (401, or 403 for an unknown one), so the file is read again next
// time even if it looks unchanged.
func (t *tokenSource) refused() { t.file.Forget() }

// current returns the last token read, for redacting error texts.
func (t *tokenSource) current() string { return t.file.Last() }

// authorization renders the header NetBox expects: v2 tokens ("nbt_<key>.<secret>")
// as Bearer, legacy v1 tokens as Token.
func authorization(tok string) string {
	if strings.HasPrefix(tok, "nbt_") {
		return "Bearer " + tok
	}
	return "Token " + tok
}
