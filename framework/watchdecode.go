package framework

import (
	"bytes"
	"encoding/json"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// How a watch stream's bytes become events, in as few passes over them as the checks allow. A watch event
// is {"type": T, "object": O}, one per frame. client-go reads each frame through encoding/json's Decoder
// (a full syntax check), decodes the envelope with another check of the whole event and a third scan to
// copy the object out, and only then checks and decodes the object: four passes over every byte
// (BenchmarkDecodeWatchStream: about 440 µs per 4 KiB request with client-go's codec, 110 µs here).
//
// Here the frame and the envelope's members are found by tracking only strings and nesting, and every
// byte is still checked once: the punctuation of the envelope (and of the object's metadata, where the
// informers' managedFields are cut) by members, the envelope's other values and the managedFields cut by
// a JSON syntax check, the object by its own decode (oneDecode). Whatever is not the usual shape — a stream that ends inside a value, a
// value that is not an object, a repeated, null or oddly spelt envelope member, any syntax error — goes
// to client-go's own framer or envelope decoder, so that the events, the errors and their kind (which
// decides whether the watch reports an error or just ends) are client-go's (FuzzWatchStream).

// valueFramer splits a JSON watch stream into its top-level objects in one pass that tracks only strings
// and nesting, and checks nothing else: the frame goes to watchEnvelope. Where the stream is not a
// sequence of whole objects, the bytes not yet framed and the rest of the stream go to the inner framer
// (client-go's), which answers as it always would. The writer side (never used by a client) is the inner's.
type valueFramer struct{ runtime.Framer }

func (f valueFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &valueFrameReader{r: r, inner: f.Framer}
}

// valueFrameReader holds what it has read and not yet framed in buf[start:n]; it has scanned up to pos,
// where the scan's state (depth, inString, escaped) stands.
type valueFrameReader struct {
	r                 io.ReadCloser
	inner             runtime.Framer
	handedOver        io.ReadCloser // the inner framer's reader, once the stream is handed to it
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
	if r.handedOver != nil {
		return r.handedOver.Read(data)
	}
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
		end, usual := r.scan()
		if !usual {
			return r.handOver(data)
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
			if r.pos > r.start {
				// The stream ended inside a value: whether that is a syntax error or a cut-off event is
				// encoding/json's to say, as it says it for client-go.
				return r.handOver(data)
			}
			return 0, r.readErr
		}
		r.fill()
	}
}

// handOver gives the inner framer the bytes not yet framed, then the rest of the stream (or its error).
func (r *valueFrameReader) handOver(data []byte) (int, error) {
	rest := io.Reader(r.r)
	if r.readErr != nil {
		rest = errReader{r.readErr}
	}
	unframed := append([]byte(nil), r.buf[r.start:r.n]...)
	r.handedOver = r.inner.NewFrameReader(io.NopCloser(io.MultiReader(bytes.NewReader(unframed), rest)))
	r.buf = nil
	return r.handedOver.Read(data)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// scan advances over buf[pos:n] and answers the end of the object (or array) begun at start, or 0 if it
// is not complete yet. Whitespace between values is skipped; anything else outside one is not the usual
// shape (a scalar, or an error), for the inner framer to judge.
func (r *valueFrameReader) scan() (end int, usual bool) {
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
				return 0, false
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
					return r.pos, true
				}
			}
		}
	}
	r.pos = len(b)
	return 0, true
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

// splitEnvelope reads a watch event's envelope in its usual shape: an object with one string "type", one
// non-null "object", and any other members except ones spelt like those or like apiVersion and kind (which
// client-go's decoder reads case-insensitively). It checks the punctuation and the other members' values;
// the object's bytes are answered unchecked, for its own decode to check. Anything else — including any
// syntax error — is not usual: client-go's decoder reads that event.
func splitEnvelope(b []byte) (typ string, object []byte, usual bool) {
	var typeRaw []byte
	end, ok := members(b, skipSpace(b, 0), func(name []byte, _, vs, ve int) bool {
		v := b[vs:ve]
		switch {
		case string(name) == "type" && typeRaw == nil && plainString(v):
			typeRaw = v
		case string(name) == "object" && object == nil && v[0] == '{':
			object = v
		case bytes.EqualFold(name, []byte("type")), bytes.EqualFold(name, []byte("object")),
			bytes.EqualFold(name, []byte("kind")), bytes.EqualFold(name, []byte("apiVersion")):
			return false
		default:
			return json.Valid(v)
		}
		return true
	})
	if !ok || typeRaw == nil || object == nil || skipSpace(b, end) != len(b) {
		return "", nil, false
	}
	return string(typeRaw[1 : len(typeRaw)-1]), object, true
}

// members walks the object beginning at b[i], checking its punctuation and its member names, and calls
// each with the member's name (unescaped), where the member starts and where its value starts and ends;
// values are found by valueEnd and not checked. It answers the index after the closing brace, and false
// where the object is broken or a call answered false: either way the caller leaves it to a decoder.
func members(b []byte, i int, each func(name []byte, start, valStart, valEnd int) bool) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		start, keyEnd := i, valueEnd(b, i)
		name := b[i+1 : max(keyEnd-1, i+1)]
		if key := b[i:keyEnd]; !plainString(key) {
			var k string
			if sigsjson.UnmarshalCaseSensitivePreserveInts(key, &k) != nil {
				return 0, false
			}
			name = []byte(k)
		}
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = skipSpace(b, i+1)
		end := valueEnd(b, i)
		if end == i || end == len(b) || !each(name, start, i, end) {
			return 0, false
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		return 0, false
	}
}

// withoutManagedFields answers a watch event's object without metadata.managedFields, or raw itself where
// it has none or is not the usual shape. The cut is exact: the object's and its metadata's punctuation is
// checked (members), every managedFields value cut is checked (json.Valid, cheaper than decoding it), and
// the rest is checked by the object's decode; so the object decodes, or fails, as it would whole. A
// repeated metadata is cut where the decode reads it (the last), every managedFields in it.
func withoutManagedFields(raw []byte) []byte {
	ms, me := -1, -1
	if _, ok := members(raw, skipSpace(raw, 0), func(name []byte, _, vs, ve int) bool {
		if string(name) == "metadata" {
			ms, me = vs, ve
		}
		return true
	}); !ok || ms < 0 || raw[ms] != '{' {
		return raw
	}
	var keep [][2]int
	cut := false
	if _, ok := members(raw, ms, func(name []byte, start, vs, ve int) bool {
		if string(name) == "managedFields" {
			cut = true
			return json.Valid(raw[vs:ve])
		}
		keep = append(keep, [2]int{start, ve})
		return true
	}); !ok || !cut {
		return raw
	}
	out := make([]byte, 0, len(raw))
	out = append(append(out, raw[:ms]...), '{')
	for k, m := range keep {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, raw[m[0]:m[1]]...)
	}
	return append(append(out, '}'), raw[me:]...)
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
