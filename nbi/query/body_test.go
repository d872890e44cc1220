package query

import (
	"strings"
	"testing"
)

func TestParseRequestData(t *testing.T) {
	d, err := ParseRequestData(MediaJSON, []byte(`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v",
		"templateParameters":{"clusterName":"c","n":3,"f":1.5,"big":1e300,"list":[1,{"x":null}],"b":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, d, RequestData{ID: "a", TemplateName: "t", TemplateVersion: "v", TemplateParameters: map[string]any{
		"clusterName": "c", "n": int64(3), "f": 1.5, "big": 1e300, "list": []any{int64(1), map[string]any{"x": nil}}, "b": true,
	}}, "JSON")
	equal(t, d.Spec(), map[string]any{"name": "", "description": "", "templateName": "t", "templateVersion": "v",
		"templateParameters": d.TemplateParameters}, "spec")

	d, err = ParseRequestData(MediaYAML, []byte("provisioningRequestId: a\nname: edge\ndescription: d\ntemplateName: t\ntemplateVersion: '1.0'\ntemplateParameters:\n  clusterName: c\n  count: 3\n  labels: {a: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, d, RequestData{ID: "a", Name: "edge", Description: "d", TemplateName: "t", TemplateVersion: "1.0",
		TemplateParameters: map[string]any{"clusterName": "c", "count": int64(3), "labels": map[string]any{"a": "b"}}}, "YAML")
	equal(t, d.Spec(), map[string]any{"name": "edge", "description": "d", "templateName": "t", "templateVersion": "1.0",
		"templateParameters": d.TemplateParameters}, "spec")

	for body, want := range map[string]string{
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","n":1e400}}`:    "out of range",
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","l":[-1e400]}}`: "out of range",
		`{"a":1,"b":2,"provisioningRequestId":"a"}`: `unknown field(s) "a", "b": ProvisioningRequestData has provisioningRequestId, name, description, templateName, templateVersion, templateParameters`,
		`{}`:    "missing required field(s): provisioningRequestId, templateName, templateVersion, templateParameters",
		`"x"`:   "the body must be a ProvisioningRequestData object, not a string",
		`[]`:    "not a list",
		`true`:  "not a boolean",
		`1`:     "not a number",
		`null`:  "not null",
		`  `:    "the body is empty",
		`{} {}`: "not valid JSON: invalid character '{' after top-level value",
		`{"a":`: "not valid JSON",
		`{"provisioningRequestId":"a","provisioningRequestId":"b","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c"}}`: `not valid JSON: duplicate field "provisioningRequestId"`,
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","labels":{"k":"1","k":"2"}}}`:  `duplicate field "templateParameters.labels.k"`,
		`{"ProvisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c"}}`:                             `unknown field(s) "ProvisioningRequestId"`,
		`{"provisioningRequestId":1,"name":false,"templateName":"t","templateVersion":"v","templateParameters":[]}`:                                   "provisioningRequestId must be a string, not a number; name must be a string, not a boolean; templateParameters must be an object, not a list",
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{}}`:                                              "templateParameters.clusterName is required",
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":""}}`:                              "clusterName must be a non-empty string, not a string",
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":{}}}`:                              "clusterName must be a non-empty string, not an object",
		`{"provisioningRequestId":"a","templateName":"t","templateVersion":"v","templateParameters":{"clusterName":"c","labels":[]}}`:                 "templateParameters.labels must be an object, not a list",
	} {
		_, err := ParseRequestData(MediaJSON, []byte(body))
		wantError(t, err, statusBadRequest, want, "%s", body)
	}
	_, err = ParseRequestData(MediaYAML, []byte("a: [\n"))
	wantError(t, err, statusBadRequest, "not valid YAML", "YAML")
	_, err = ParseRequestData(MediaJSON, []byte(`{"`+strings.Repeat("u", 400)+`":1}`))
	wantError(t, err, statusBadRequest, "…: ProvisioningRequestData has", "a long unknown field is cut short")
}

func TestBodyMedia(t *testing.T) {
	for ct, want := range map[string]string{
		"application/json":                  MediaJSON,
		"application/yaml":                  MediaYAML,
		"Application/JSON; charset=UTF-8":   MediaJSON,
		"application/yaml;charset=utf-8":    MediaYAML,
		"application/json; boundary=ignore": MediaJSON,
	} {
		got, err := BodyMedia(ct)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", ct, got, err, want)
		}
	}
	for ct, want := range map[string]string{
		"":                                 `Content-Type "" is not supported: send application/json or application/yaml`,
		"text/plain":                       `Content-Type "text/plain" is not supported`,
		"application/json;;":               "is not supported",
		"application/x-yaml":               "is not supported",
		"application/json; charset=latin1": `charset "latin1" is not supported: send UTF-8`,
		"text/" + strings.Repeat("x", 200): `…" is not supported`,
	} {
		_, err := BodyMedia(ct)
		wantError(t, err, statusUnsupportedMediaType, want, "%q", ct)
	}
	wantError(t, TooLarge(), statusRequestEntityTooLarge, "the body is larger than 1048576 bytes", "TooLarge")
}
