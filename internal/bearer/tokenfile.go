package bearer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Why a file's content is not a token. Read failures (missing, unreadable) are the os errors themselves.
var (
	ErrEmpty    = errors.New("is empty")
	ErrTooLarge = errors.New("is too large to be an API token")
	ErrNotToken = errors.New("holds characters that cannot be an API token")
)

// File is a token file that rotates under the process (kubelet swaps a mounted Secret or projected token
// atomically, an operator may rewrite it in place). It is read again whenever it changed — another file
// (inode), another size or mtime: one stat per request, far cheaper than the call it authorises — and
// after the server refused the token (Forget), so a rewrite within the mtime granularity is picked up
// too. A file briefly unreadable or empty (mid-swap, a remount) is no reason to fail: the last good
// token is used meanwhile.
type File struct {
	path    string
	maxSize int64

	mu    sync.Mutex
	seen  os.FileInfo // the file value was read from; nil = read on the next call
	value string
	last  string // the last token read successfully; kept when value is forgotten
}

// NewFile reads tokens from path, refusing files larger than maxSize bytes (a wrongly mounted file is
// not slurped).
func NewFile(path string, maxSize int64) *File { return &File{path: path, maxSize: maxSize} }

// Path is the file's path, for messages.
func (f *File) Path() string { return f.path }

// Token is the current token: the file's content if it reads as one, else the last good token. The
// error (why the file does not read as a token) comes only when no token was ever read.
func (f *File) Token() (string, error) {
	tok, err := f.Read()
	if err == nil {
		return tok, nil
	}
	if last := f.Last(); last != "" {
		return last, nil
	}
	return "", err
}

// Read reads the file now (or reuses what it read from the unchanged file) and fails if it does not
// hold a token: what a start-up check wants, where an unreadable file is a configuration error.
func (f *File) Read() (string, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen != nil && os.SameFile(f.seen, fi) && fi.ModTime().Equal(f.seen.ModTime()) && fi.Size() == f.seen.Size() {
		return f.value, nil
	}
	tok, err := readToken(f.path, f.maxSize)
	if err != nil {
		return "", err
	}
	f.seen, f.value, f.last = fi, tok, tok
	return tok, nil
}

// Forget makes the next call read the file again: the server refused the token, so it may have been
// rewritten without a visible change.
func (f *File) Forget() {
	f.mu.Lock()
	f.seen = nil
	f.mu.Unlock()
}

// Last is the last token read successfully ("" if none), e.g. to redact it from an error text.
func (f *File) Last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func readToken(path string, maxSize int64) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	buf, err := io.ReadAll(io.LimitReader(fh, maxSize+1))
	if err != nil {
		return "", err
	}
	if int64(len(buf)) > maxSize {
		return "", ErrTooLarge
	}
	tok := strings.TrimSpace(string(buf))
	if tok == "" {
		return "", ErrEmpty
	}
	for _, r := range tok {
		// Printable ASCII without spaces: anything else would corrupt the Authorization header.
		if r <= ' ' || r > '~' {
			return "", ErrNotToken
		}
	}
	return tok, nil
}

// Describe words err for a message about the file called name (a path or an environment variable):
// "NAME is empty", "NAME cannot be read". The os error's detail (which may name the path) is left out.
func Describe(name string, err error) string {
	for _, known := range []error{ErrEmpty, ErrTooLarge, ErrNotToken} {
		if errors.Is(err, known) {
			return fmt.Sprintf("%s %s", name, known)
		}
	}
	return name + " cannot be read"
}
