package query

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/o2ims-operator/o2ims-operator/internal/quote"
)

// Media types the API reads and writes; the reference lists both for every body.
const (
	MediaJSON = "application/json"
	MediaYAML = "application/yaml"
)

// MaxBodyBytes bounds a POST or PUT body; a larger one is refused with 413 (TooLarge) without being read.
const MaxBodyBytes = 1 << 20

// RequestData is a checked ProvisioningRequestData: what becomes the CR's name (ID) and spec.
type RequestData struct {
	ID                 string
	Name, Description  string
	TemplateName       string
	TemplateVersion    string
	TemplateParameters map[string]any
}

// dataFields are the members of the reference's ProvisioningRequestData, in its order.
var dataFields = []string{"provisioningRequestId", "name", "description", "templateName", "templateVersion", "templateParameters"}

// BodyMedia reads a POST/PUT body's Content-Type: JSON, or YAML since the reference lists
// application/yaml for every body too, in UTF-8. Anything else is a 415 *Error.
func BodyMedia(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != MediaJSON && mt != MediaYAML) {
		return "", errorf(statusUnsupportedMediaType,
			"Content-Type %q is not supported: send application/json or application/yaml", quote.Truncate(contentType, 100))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "", errorf(statusUnsupportedMediaType, "charset %q is not supported: send UTF-8", quote.Truncate(cs, 40))
	}
	return mt, nil
}

// TooLarge is the 413 refusal of a body of more than MaxBodyBytes.
func TooLarge() *Error {
	return errorf(statusRequestEntityTooLarge, "the body is larger than %d bytes", MaxBodyBytes)
}

// ParseRequestData decodes and checks a ProvisioningRequestData body of the given media type (MediaJSON
// or MediaYAML). Every problem is the caller's, so every error is a 400 *Error that says what is wrong.
// The id's format is left to the caller: POST refuses a bad one with 400, PUT compares it with the path
// first (422).
func ParseRequestData(media string, data []byte) (RequestData, error) {
	var d RequestData
	if len(bytes.TrimSpace(data)) == 0 {
		return d, errorf(statusBadRequest, "the body is empty: send a ProvisioningRequestData object")
	}
	if media == MediaYAML {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return d, errorf(statusBadRequest, "the body is not valid YAML: %v", err)
		}
		data = j
	}
	v, err := decodeJSON(data)
	if err != nil {
		return d, errorf(statusBadRequest, "the body is not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return d, errorf(statusBadRequest, "the body must be a ProvisioningRequestData object, not %s", quote.JSONType(v))
	}
	var unknown, missing, wrong []string
	known := map[string]bool{}
	for _, f := range dataFields {
		known[f] = true
	}
	for k := range obj {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return d, errorf(statusBadRequest, "unknown field(s) %s: ProvisioningRequestData has %s",
			quote.Truncate(quoteAll(unknown), 300), strings.Join(dataFields, ", "))
	}
	text := func(field string, required bool) string {
		v, present := obj[field]
		if !present {
			if required {
				missing = append(missing, field)
			}
			return ""
		}
		s, ok := v.(string)
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s must be a string, not %s", field, quote.JSONType(v)))
		}
		return s
	}
	d.ID = text("provisioningRequestId", true)
	d.Name = text("name", false)
	d.Description = text("description", false)
	d.TemplateName = text("templateName", true)
	d.TemplateVersion = text("templateVersion", true)
	if p, present := obj["templateParameters"]; !present {
		missing = append(missing, "templateParameters")
	} else if d.TemplateParameters, ok = p.(map[string]any); !ok {
		wrong = append(wrong, fmt.Sprintf("templateParameters must be an object, not %s", quote.JSONType(p)))
	}
	if len(missing) > 0 {
		return d, errorf(statusBadRequest, "missing required field(s): %s", strings.Join(missing, ", "))
	}
	if len(wrong) > 0 {
		return d, errorf(statusBadRequest, "%s", strings.Join(wrong, "; "))
	}
	if err := checkTemplateParameters(d.TemplateParameters); err != nil {
		return d, badRequest(err)
	}
	return d, nil
}

// checkTemplateParameters refuses at the door what the provisioning chain would fail the request for
// (the seed's "POST no clusterName -> 400"): the CAPI templates this operator renders need a clusterName
// to name the cluster and its package, and labels, when given, become a set-labels configMap.
func checkTemplateParameters(p map[string]any) error {
	cn, present := p["clusterName"]
	if !present {
		return fmt.Errorf("templateParameters.clusterName is required: the name of the cluster to provision")
	}
	if s, ok := cn.(string); !ok || s == "" {
		return fmt.Errorf("templateParameters.clusterName must be a non-empty string, not %s", quote.JSONType(cn))
	}
	if l, present := p["labels"]; present {
		if _, ok := l.(map[string]any); !ok {
			return fmt.Errorf("templateParameters.labels must be an object, not %s", quote.JSONType(l))
		}
	}
	return nil
}

// DecodeJSON reads exactly one JSON value into v with sigs.k8s.io/json's strict decoding (the API
// server's own): a duplicate key, or an unknown field of a struct, is an error; keys match
// case-sensitively; a number in an interface becomes int64 when it is an integer that fits and float64
// otherwise — the types an unstructured object may hold.
func DecodeJSON(data []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		if syntax, _ := sigsjson.SyntaxErrorOffset(err); !syntax {
			if _, isAny := v.(*any); isAny {
				// Into an interface only a number can fail to convert: one beyond float64's range.
				return fmt.Errorf("a number is out of range (%v)", err)
			}
		}
		return err
	}
	return errors.Join(strict...)
}

func decodeJSON(data []byte) (any, error) {
	var v any
	return v, DecodeJSON(data, &v)
}

// Spec is the ProvisioningRequest spec the data stands for. name and description are "" when the SMO
// gave none: the CRD refuses null and the reference requires both in every answer.
func (d RequestData) Spec() map[string]any {
	return map[string]any{
		"name":               d.Name,
		"description":        d.Description,
		"templateName":       d.TemplateName,
		"templateVersion":    d.TemplateVersion,
		"templateParameters": d.TemplateParameters,
	}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
