package framework

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	sigsjson "sigs.k8s.io/json"
)

// The codec of our dynamic clients: a JSON answer of the API server becomes an unstructured object in one
// decoding pass. client-go's (dynamic.ConfigFor) first decodes every body with encoding/json only to find
// its apiVersion and kind, then again through Unstructured.UnmarshalJSON, which validates and decodes it a
// third time; a watch event pays that for its envelope and again for its object. Under a burst of 1 000
// requests those passes were about a fifth of the operator's CPU (docs/benchmarks.md, section 2).
//
// The result is the same object client-go's codec gives: the same decoder (sigs.k8s.io/json, case
// sensitive, integers kept as int64) fills the same map. What client-go would decode into a typed object
// (a Status, a list) goes to client-go's own codec unchanged.

// protobufConfig is the typed clients' config: built-in kinds (Events, the Lease, Secrets) travel as
// protobuf, as kube-controller-manager's do, which is cheaper to encode and decode than JSON on both
// ends; Events are three of a fulfilled request's seven writes. Custom resources have no protobuf form
// and stay on the dynamic clients' JSON.
func protobufConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// newRESTClient is the REST client under dynamic.NewForConfigAndClient, with this codec.
func newRESTClient(cfg *rest.Config, h *http.Client, opts codecOptions) (rest.Interface, error) {
	c := dynamic.ConfigFor(cfg)
	c.GroupVersion = nil
	c.APIPath = "/if-you-see-this-search-for-the-break" // as client-go's: every path is absolute
	c.NegotiatedSerializer = newUnstructuredCodec(c.NegotiatedSerializer, opts)
	return rest.UnversionedRESTClientForConfigAndClient(c, h)
}

// codecOptions say what a client's codec may leave out of the objects it decodes.
type codecOptions struct {
	// dropManagedFields: metadata.managedFields are cut from each watch event's object before it is
	// decoded (withoutManagedFields, watchdecode.go).
	// For the informers' client only: nothing reads them (stripUnread drops them from the cache anyway),
	// and as served they are a third of a request's bytes, decoded into maps only to be thrown away.
	dropManagedFields bool
}

// written is what the framework keeps of a write's answer: the version it made, and whose.
type written struct {
	ResourceVersion string
	UID             types.UID
}

func writtenOf(u *unstructured.Unstructured) written {
	return written{u.GetResourceVersion(), u.GetUID()}
}

// patchIdentity sends a JSON merge patch and decodes only the identity of the answer. The answer is the
// whole object, managedFields and all, and the framework keeps nothing else of it (the watch brings the
// object): decoding it into maps was a quarter of the operator's allocations under a burst.
func (p *perResource) patchIdentity(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, body []byte, sub ...string) (written, error) {
	path := []string{"apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"api", gvr.Version}
	}
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	path = append(append(path, gvr.Resource, name), sub...)
	raw, err := p.client(gvr.GroupResource()).rest.Patch(types.MergePatchType).AbsPath(path...).Body(body).Do(ctx).Raw()
	if err != nil {
		return written{}, err
	}
	var answer struct {
		Metadata struct {
			ResourceVersion string    `json:"resourceVersion"`
			UID             types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &answer); err != nil {
		return written{}, fmt.Errorf("decoding the answer to a patch of %s %s: %w", gvr.Resource, name, err)
	}
	return written(answer.Metadata), nil
}

// unstructuredCodec is client-go's dynamic codec with the JSON decoders replaced.
type unstructuredCodec struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newUnstructuredCodec(inner runtime.NegotiatedSerializer, opts codecOptions) runtime.NegotiatedSerializer {
	infos := slices.Clone(inner.SupportedMediaTypes())
	for i := range infos {
		if infos[i].MediaType != runtime.ContentTypeJSON {
			continue
		}
		infos[i].Serializer = oneDecode{infos[i].Serializer}
		if s := infos[i].StreamSerializer; s != nil {
			stream := *s
			stream.Serializer = watchEnvelope{s.Serializer, opts.dropManagedFields}
			stream.Framer = valueFramer{s.Framer}
			infos[i].StreamSerializer = &stream
		}
	}
	return unstructuredCodec{NegotiatedSerializer: inner, infos: infos}
}

func (c unstructuredCodec) SupportedMediaTypes() []runtime.SerializerInfo { return c.infos }

// oneDecode decodes an object into an Unstructured in one pass.
type oneDecode struct{ runtime.Serializer }

func (d oneDecode) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	u, ok := into.(*unstructured.Unstructured)
	if into != nil && !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	m := map[string]any{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		return nil, nil, err
	}
	fresh := into == nil
	if fresh {
		// client-go answers a Status or a list as such: leave those to it.
		if _, list := m["items"]; list || m["kind"] == "Status" {
			return d.Serializer.Decode(data, defaults, nil)
		}
		u = &unstructured.Unstructured{}
	}
	u.Object = m
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" {
		return nil, &gvk, runtime.NewMissingKindErr(string(data))
	}
	if fresh && gvk.Version == "" {
		// As client-go's: an object made from nothing needs its version (one decoded into needs only a kind).
		return nil, &gvk, runtime.NewMissingVersionErr(string(data))
	}
	return u, &gvk, nil
}

// watchEnvelope reads a watch event's envelope ({"type", "object"}) straight into a WatchEvent
// (splitEnvelope, watchdecode.go); the object is decoded by oneDecode. client-go's decodes the envelope
// with encoding/json first, to read an apiVersion and kind it does not have, then again, checking it all.
type watchEnvelope struct {
	runtime.Serializer
	dropManagedFields bool // see codecOptions
}

func (d watchEnvelope) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	gvk := metav1.SchemeGroupVersion.WithKind("WatchEvent")
	typ, object, usual := splitEnvelope(data)
	if usual {
		// A copy: data is the stream decoder's buffer, which the next frame overwrites.
		*ev = metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: append([]byte(nil), object...)}}
	} else {
		// Not the usual shape: client-go's decoder reads it, and fails where it fails.
		if _, _, err := d.Serializer.Decode(data, defaults, ev); err != nil {
			return nil, nil, err
		}
	}
	if d.dropManagedFields && ev.Object.Raw != nil {
		ev.Object.Raw = withoutManagedFields(ev.Object.Raw)
	}
	return ev, &gvk, nil
}
