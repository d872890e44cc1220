package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// How a watch stream's bytes become events, in as few passes over them as the checks allow. A watch event
// is {"type": T, "object": O}, one per frame. client-go reads each frame through encoding/json's Decoder
// (a full syntax check), decodes the envelope with another check of the whole event and a third scan to
// copy the object out, and only then checks and decodes the object: four passes over every byte
// (BenchmarkDecodeWatchStream: about 390 µs per 4 KiB request with client-go's codec, 100 µs here). Here
// the frame and the envelope are found by tracking only strings and nesting, and every byte is still
// checked once: the envelope's punctuation by splitEnvelope, its type and any other member by a JSON
// decoder, the object by its own decode (oneDecode). What no check reads is the managedFields of the
// informers' events, which are cut unread (codecOptions).

// valueFramer splits a JSON watch stream into its top-level values, as client-go's JSON framer does, in
// one pass that tracks only strings and nesting, and checks nothing else: the frame goes to watchEnvelope.
// The writer side (never used by a client) is the inner framer's.
type valueFramer struct{ runtime.Framer }

func (valueFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &valueFrameReader{r: r} }

// valueFrameReader holds what it has read and not yet framed in buf[start:n]; it has scanned up to pos,
// where the scan's state (depth, inString, escaped) stands.
type valueFrameReader struct {
	r                 io.ReadCloser
	buf               []byte
	start, pos, n     int
	depth             int
	inString, escaped bool
	readErr           error  // the reader's error, returned once the buffered bytes are framed
	remaining         []byte // the rest of a frame larger than the caller's buffer
}

// minFrameBuffer is the first read buffer (it grows to the largest frame): an object of ours is 1–5 KiB as served.
const minFrameBuffer = 8 << 10

// Read copies the next frame into data. A frame larger than data is returned in parts, each but the last
// with io.ErrShortBuffer, which is how client-go's streaming decoder grows its buffer.
func (r *valueFrameReader) Read(data []byte) (int, error) {
	if len(r.remaining) > 0 {
		n := copy(data, r.remaining)
		r.remaining = r.remaining[n:]
		if len(r.remaining) > 0 {
			return n, io.ErrShortBuffer
		}
		r.remaining = nil
		return n, nil
	}
	for {
		end, err := r.scan()
		if err != nil {
			return 0, err
		}
		if end > 0 {
			frame := r.buf[r.start:end]
			n := copy(data, frame)
			if n < len(frame) {
				r.remaining = append([]byte(nil), frame[n:]...)
			}
			r.start = end
			if n < len(frame) {
				return n, io.ErrShortBuffer
			}
			return n, nil
		}
		if r.readErr != nil {
			if r.readErr == io.EOF && r.pos > r.start {
				return 0, io.ErrUnexpectedEOF // the stream ended inside a value, as encoding/json says it
			}
			return 0, r.readErr
		}
		r.fill()
	}
}

// scan advances over buf[pos:n] and answers the end of the value begun at start, or 0 if it is not
// complete yet. Whitespace between values is skipped; anything else outside a value is refused, as
// encoding/json refuses it.
func (r *valueFrameReader) scan() (int, error) {
	b := r.buf[:r.n]
	for i := r.pos; i < len(b); i++ {
		if r.inString {
			// Most of a watch event is inside strings: jump to the next quote or backslash.
			if r.escaped {
				r.escaped = false
				continue
			}
			j := quoteOrBackslash(b[i:])
			if j < 0 {
				break
			}
			i += j
			if b[i] == '\\' {
				r.escaped = true
			} else {
				r.inString = false
			}
			continue
		}
		c := b[i]
		switch {
		case r.depth == 0:
			switch c {
			case ' ', '\t', '\r', '\n':
				r.start = i + 1
			case '{', '[':
				r.depth = 1
			default:
				r.pos = i
				return 0, fmt.Errorf("watch stream: invalid character %q looking for the beginning of an object", c)
			}
		default:
			switch c {
			case '"':
				r.inString = true
			case '{', '[':
				r.depth++
			case '}', ']':
				r.depth--
				if r.depth == 0 {
					r.pos = i + 1
					return r.pos, nil
				}
			}
		}
	}
	r.pos = len(b)
	return 0, nil
}

// quoteOrBackslash answers the index of the first '"' or '\\' in b, or -1.
func quoteOrBackslash(b []byte) int {
	q := bytes.IndexByte(b, '"')
	if q < 0 {
		q = len(b)
	}
	if e := bytes.IndexByte(b[:q], '\\'); e >= 0 {
		return e
	}
	if q == len(b) {
		return -1
	}
	return q
}

// fill moves the unframed bytes to the front, grows the buffer when a frame fills it, and reads once.
func (r *valueFrameReader) fill() {
	if r.start > 0 {
		copy(r.buf, r.buf[r.start:r.n])
		r.n -= r.start
		r.pos -= r.start
		r.start = 0
	}
	if r.n == len(r.buf) {
		grown := make([]byte, max(2*len(r.buf), minFrameBuffer))
		copy(grown, r.buf[:r.n])
		r.buf = grown
	}
	m, err := r.r.Read(r.buf[r.n:])
	r.n += m
	if err != nil {
		r.readErr = err
	}
}

func (r *valueFrameReader) Close() error { return r.r.Close() }

// splitEnvelope reads a watch event's envelope: an object whose "type" is a string and whose "object" is
// any value (null as none), as encoding/json would read it into a WatchEvent (the last of a repeated key
// wins, unknown members are ignored). The punctuation is checked here, the type and unknown members by a
// decoder; the object's bytes are answered unchecked, for its own decode to check.
func splitEnvelope(b []byte) (typ string, object []byte, err error) {
	bad := func(what string, at int) error {
		return fmt.Errorf("watch event: %s at offset %d", what, at)
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", nil, bad("not an object", i)
	}
	var typeRaw []byte
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return "", nil, bad("want a member name", i)
			}
			keyEnd := valueEnd(b, i)
			key := b[i:keyEnd]
			if !plainString(key) {
				var k string
				if err := sigsjson.UnmarshalCaseSensitivePreserveInts(key, &k); err != nil {
					return "", nil, fmt.Errorf("watch event: member name: %w", err)
				}
				key = []byte(`"` + k + `"`)
			}
			i = skipSpace(b, keyEnd)
			if i >= len(b) || b[i] != ':' {
				return "", nil, bad("want ':'", i)
			}
			i = skipSpace(b, i+1)
			end := valueEnd(b, i)
			if end == i {
				return "", nil, bad("want a value", i)
			}
			// Only the last type and object are read; every other value is checked here.
			v := b[i:end]
			switch string(key) {
			case `"type"`:
				v, typeRaw = typeRaw, v
			case `"object"`:
				v, object = object, v
			}
			if v != nil && !json.Valid(v) {
				return "", nil, bad("invalid value", i)
			}
			i = skipSpace(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return "", nil, bad("want ',' or '}'", i)
		}
	}
	if i = skipSpace(b, i); i != len(b) {
		return "", nil, bad("data after the event", i)
	}
	if plainString(typeRaw) {
		typ = string(typeRaw[1 : len(typeRaw)-1])
	} else if typeRaw != nil {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(typeRaw, &typ); err != nil {
			return "", nil, fmt.Errorf("watch event: type: %w", err)
		}
	}
	if bytes.Equal(object, []byte("null")) {
		object = nil
	}
	return typ, object, nil
}

// plainString says whether a string's JSON (quotes included) is its text: no escape, no control byte
// (which JSON forbids unescaped). Anything else goes through a decoder, which checks it.
func plainString(b []byte) bool {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return false
	}
	for _, c := range b[1 : len(b)-1] {
		if c < 0x20 || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// valueEnd answers where the value beginning at b[i] ends, tracking only strings and nesting (a scalar ends
// at the next delimiter); i itself when there is none, len(b) when it does not end.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); {
			k := quoteOrBackslash(b[j:])
			if k < 0 {
				return len(b)
			}
			j += k
			if b[j] == '"' {
				return j + 1
			}
			j += 2 // a backslash and the byte it escapes
		}
		return len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = valueEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	case ',', '}', ']', ':':
		return i
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	return j
}
