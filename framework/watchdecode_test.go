package framework

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// decodeStreamFrom decodes a watch stream read through wrap (one byte at a time, say), up to its end or
// its first error.
func decodeStreamFrom(t testing.TB, ns runtime.NegotiatedSerializer, stream string, wrap func(io.Reader) io.Reader) ([]watchEvent, error) {
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(wrap(strings.NewReader(stream))))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), info.Serializer)
	var out []watchEvent
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, watchEvent{typ, obj})
	}
}

func asIs(r io.Reader) io.Reader { return r }

const wideObject = `{"apiVersion":"test.o2ims.io/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"7"},"spec":{"s":"%s"}}`

// watchStreams are streams whose events our codec must read exactly as client-go's does: frames in any
// whitespace, strings holding what looks like structure, escapes at every place, members in any order,
// repeated and unknown, escaped member names, and an event far larger than any first buffer.
var watchStreams = []string{
	`{"type":"ADDED","object":` + validBody + "}\n",
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}}{"type":"DELETED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}}`,
	" \r\n\t{ \"type\" : \"MODIFIED\" ,\n  \"object\" :\n {\"apiVersion\":\"v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"pretty\"}}\n}\n\n",
	`{"object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"b\"}]{[\\","annotations":{"x":"\\\\\"\\\\"}}},"type":"ADDED"}`,
	`{"type":"ADDED","extra":{"a":[1,2.5e3,null,true,"}"]},"object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"c"}},"more":-0.5}`,
	`{"type":"DELETED","type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"first"}},"object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"last"}}}`,
	`{"ty\u0070e":"ADDED","\u006fbject":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"escaped-keys"}}}`,
	`{"type":"\u0041DDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"é\u00e9\ud83d\ude00"}}}`,
	`{"type":"ADDED","object":` + strings.Replace(wideObject, "%s", strings.Repeat(`ab\"c{d}\\`, 20000), 1) + "}\n",
	`{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"Widget","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
}

// Streams neither codec may accept: each one's last event is broken (the ones before it decode).
var brokenWatchStreams = []string{
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}}}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}} x`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}},}`,
	`{"type":"ADDED" "object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"]}}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}},"x":[1,}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}},"x":01}`,
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"raw\nnewline\"}}}",
	"{\"ty\npe\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"a\"}}}",
	`{"type":ADDED,"object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}}`,
	`{"type":1,"object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a"}}}`,
	`{"type":"ADDED","object":null}`,
	`{"type":"ADDED"}`,
	`{"type":"ADDED","object":[1]}`,
	`["ADDED"]`,
	`"ADDED"`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"Widget","metadata":{"name":"a\`,
	// Members client-go's decoder reads in the envelope itself, repeated or null ones (client-go keeps
	// the first error, and ignores a null), and scalars, complete or cut off.
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}},"kind":1}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}},"kind":"Foo"}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}},"apiVersion":"a/b/c"}`,
	`{"type":1,"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}}}`,
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"W\",\"metadata\":{\"name\":\"a\"}}}\n{\"type\":x",
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"W\",\"metadata\":{\"name\":\"a\"}}}\n\"abc",
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"W\",\"metadata\":{\"name\":\"a\"}}}\ntru",
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"W\",\"metadata\":{\"name\":\"a\"}}}\n1 2",
}

// Streams client-go accepts in shapes the API server never sends: each goes to client-go's own decoder.
var oddWatchStreams = []string{
	`{"type":"ADDED","type":null,"object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}}}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}},"object":null}`,
	`{"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"name":"a"}},"kind":"WatchEvent","apiVersion":"v1"}`,
}

// Every stream decodes, read whole or a byte at a time, to the events client-go's codec makes of it; a
// broken one fails as client-go's fails, after the same events.
func TestWatchStreamsDecodeAsClientGoDoes(t *testing.T) {
	readers := map[string]func(io.Reader) io.Reader{"whole": asIs, "byte by byte": iotest.OneByteReader, "halves": iotest.HalfReader}
	for rname, wrap := range readers {
		for i, s := range append(append([]string{}, watchStreams...), oddWatchStreams...) {
			stock, err := decodeStreamFrom(t, stockCodec(), s, wrap)
			require.NoError(t, err, "stream %d", i)
			require.NotEmpty(t, stock)
			ours, err := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{}), s, wrap)
			require.NoError(t, err, "%s, stream %d", rname, i)
			assert.Equal(t, stock, ours, "%s, stream %d", rname, i)
		}
		for i, s := range brokenWatchStreams {
			stock, stockErr := decodeStreamFrom(t, stockCodec(), s, wrap)
			ours, oursErr := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{}), s, wrap)
			require.Error(t, stockErr, "client-go accepts broken stream %d", i)
			assert.Error(t, oursErr, "%s, broken stream %d: %s", rname, i, s)
			assert.Equal(t, endsQuietly(stockErr), endsQuietly(oursErr), "%s, broken stream %d: %v / %v", rname, i, stockErr, oursErr)
			assert.Equal(t, stock, ours, "%s, broken stream %d", rname, i)
		}
	}
}

// endsQuietly says whether a watch that fails so just ends (client-go's StreamWatcher logs a cut-off
// stream) rather than sending an ERROR event to its reader.
func endsQuietly(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }

// An informer's client reads its events without managedFields and otherwise as client-go does; the other
// clients keep them. The cut leaves valid JSON wherever the member sits.
func TestInformerEventsComeWithoutManagedFields(t *testing.T) {
	mf := `"managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:s":{}}}}]`
	objects := []string{
		`{"apiVersion":"v1","kind":"Widget","metadata":{` + mf + `,"name":"first","labels":{"a":"b"}},"spec":{"s":"x"}}`,
		`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"middle",` + mf + `,"labels":{"a":"b"}},"spec":{"s":"x"}}`,
		`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"last","labels":{"a":"b"} , ` + mf + ` },"spec":{"s":"x"}}`,
		`{"apiVersion":"v1","kind":"Widget","metadata":{` + mf + `},"spec":{"managedFields":"not metadata's"}}`,
		`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"none"},"spec":{"s":"x"}}`,
	}
	var stream strings.Builder
	for _, o := range objects {
		stream.WriteString(`{"type":"MODIFIED","object":` + o + "}\n")
	}
	stock, err := decodeStreamFrom(t, stockCodec(), stream.String(), asIs)
	require.NoError(t, err)
	informer, err := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{dropManagedFields: true}), stream.String(), iotest.OneByteReader)
	require.NoError(t, err)
	other, err := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{}), stream.String(), asIs)
	require.NoError(t, err)
	require.Len(t, informer, len(objects))
	assert.Equal(t, stock, other, "other clients keep managedFields")
	for i := range objects {
		want := stock[i].Object.(*unstructured.Unstructured).DeepCopy()
		if i < 4 {
			require.NotEmpty(t, want.GetManagedFields(), "object %d has managedFields as client-go reads it", i)
		}
		unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
		assert.Equal(t, want, informer[i].Object, "object %d", i)
	}
	assert.Equal(t, "not metadata's", informer[3].Object.(*unstructured.Unstructured).Object["spec"].(map[string]any)["managedFields"])

	// A broken object fails as it does whole, wherever it is broken: the cut reads what it cuts, and
	// nothing outside it goes.
	for _, o := range []string{
		`{"apiVersion":"v1","kind":"W","metadata":{"name":"x" x "managedFields":[]}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"managedFields":[] "name":"x"}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"name":"x","managedFields":[01]}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"name":"x","managedFields":["\u00"]}}`,
		`{"apiVersion":"0","kind":"0","metadata":{"":"""managedFields"[]}}`,
	} {
		ev := `{"type":"ADDED","object":` + o + "}\n"
		_, stockErr := decodeStreamFrom(t, stockCodec(), ev, asIs)
		_, informerErr := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{dropManagedFields: true}), ev, asIs)
		require.Error(t, stockErr, o)
		assert.Error(t, informerErr, o)
	}
	// A repeated metadata is cut where the decode reads it, the last, and every managedFields in it.
	ev := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"W","metadata":{"managedFields":[1]},"metadata":{"name":"x","managedFields":[2],"managedFields":[3]}}}`
	got, err := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{dropManagedFields: true}), ev, asIs)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "x"}, got[0].Object.(*unstructured.Unstructured).Object["metadata"])
}

// A frame larger than the caller's buffer comes in parts, each but the last with io.ErrShortBuffer, as
// client-go's framer gives it (its streaming decoder grows its buffer so).
func TestValueFramerHandsOutLargeFramesInParts(t *testing.T) {
	frame := `{"a":"` + strings.Repeat("x", 100) + `"}`
	r := valueFramer{}.NewFrameReader(io.NopCloser(strings.NewReader(frame + "\n" + `{"b":1}`)))
	var got bytes.Buffer
	buf := make([]byte, 16)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err == nil {
			break
		}
		require.ErrorIs(t, err, io.ErrShortBuffer)
	}
	assert.Equal(t, frame, got.String())
	n, err := r.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, `{"b":1}`, string(buf[:n]))
	_, err = r.Read(buf)
	assert.Equal(t, io.EOF, err)
}

// Any stream: our codec decodes the events client-go's decodes, identically, and fails where it fails.
func FuzzWatchStream(f *testing.F) {
	for _, s := range append(append([]string{}, watchStreams[:8]...), brokenWatchStreams...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// client-go finds apiVersion and kind case-insensitively (encoding/json) before it decodes the object
		// case-sensitively, so it accepts {"ApiVersion":"v1",…} as an object whose apiVersion is empty; ours
		// reads them as the object has them. The API server writes them exactly.
		if lower := strings.ToLower(s); strings.Count(lower, "apiversion") != strings.Count(s, "apiVersion") ||
			strings.Count(lower, `"kind"`) != strings.Count(s, `"kind"`) {
			t.Skip("apiVersion or kind spelt in another case")
		}
		stock, stockErr := decodeStreamFrom(t, stockCodec(), s, asIs)
		for _, wrap := range []func(io.Reader) io.Reader{asIs, iotest.OneByteReader} {
			ours, oursErr := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{}), s, wrap)
			if (stockErr == nil) != (oursErr == nil) || endsQuietly(stockErr) != endsQuietly(oursErr) {
				t.Fatalf("client-go: %v; ours: %v", stockErr, oursErr)
			}
			if !assert.ObjectsAreEqual(stock, ours) {
				t.Fatalf("client-go decoded %#v, ours %#v", stock, ours)
			}
		}
	})
}

// Any stream: the informers' client decodes client-go's events less their managedFields, and fails where
// client-go fails.
func FuzzInformerWatchStream(f *testing.F) {
	mf := `"managedFields":[{"manager":"m","operation":"Update","fieldsV1":{"f:spec":{}}}]`
	for _, o := range []string{
		`{"apiVersion":"v1","kind":"W","metadata":{` + mf + `,"name":"a"}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"name":"a",` + mf + `},"spec":{"managedFields":1}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"name":"x" x ` + mf + `}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"managedFields":[1]},"metadata":{"managedFields":[2],"name":"b"}}`,
		`{"apiVersion":"v1","kind":"W","metadata":{"m\u0061nagedFields":[1],"name":"c"}}`,
	} {
		f.Add(`{"type":"MODIFIED","object":` + o + "}\n")
	}
	f.Fuzz(func(t *testing.T, s string) {
		if lower := strings.ToLower(s); strings.Count(lower, "apiversion") != strings.Count(s, "apiVersion") ||
			strings.Count(lower, `"kind"`) != strings.Count(s, `"kind"`) {
			t.Skip("apiVersion or kind spelt in another case (see FuzzWatchStream)")
		}
		stock, stockErr := decodeStreamFrom(t, stockCodec(), s, asIs)
		informer, err := decodeStreamFrom(t, newUnstructuredCodec(stockCodec(), codecOptions{dropManagedFields: true}), s, asIs)
		if (stockErr == nil) != (err == nil) || endsQuietly(stockErr) != endsQuietly(err) {
			t.Fatalf("client-go: %v; informer: %v", stockErr, err)
		}
		for i := range stock {
			if u, ok := stock[i].Object.(*unstructured.Unstructured); ok {
				u = u.DeepCopy()
				if md, ok := u.Object["metadata"].(map[string]any); ok {
					delete(md, "managedFields")
				}
				stock[i].Object = u
			}
		}
		if !assert.ObjectsAreEqual(stock, informer) {
			t.Fatalf("client-go less managedFields %#v, informer %#v", stock, informer)
		}
	})
}

// BenchmarkDecodeWatchStream decodes 50 events of a fulfilled ProvisioningRequest as kube-apiserver served
// it in `make run-local` (testdata/served-provisioningrequest.json: 4 KiB, a third of it managedFields) from
// one stream, as an informer does.
func BenchmarkDecodeWatchStream(b *testing.B) {
	served, err := os.ReadFile("testdata/served-provisioningrequest.json")
	require.NoError(b, err)
	event := `{"type":"MODIFIED","object":` + string(bytes.TrimSpace(served)) + "}\n"
	stream := strings.Repeat(event, 50)
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{
		{"client-go", stockCodec()},
		{"ours", newUnstructuredCodec(stockCodec(), codecOptions{})},
		{"ours, informer", newUnstructuredCodec(stockCodec(), codecOptions{dropManagedFields: true})},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				evs, err := decodeStreamFrom(b, c.ns, stream, asIs)
				if err != nil || len(evs) != 50 {
					b.Fatal(err, len(evs))
				}
			}
		})
	}
}
