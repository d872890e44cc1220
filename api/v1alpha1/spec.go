package v1alpha1

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Spec field names (spec.<name>). templateName, templateVersion and templateParameters are required by the
// CRD; api/spec.Parse decides what a valid request is.
const (
	FieldSpec               = "spec"
	FieldName               = "name"
	FieldDescription        = "description"
	FieldTemplateName       = "templateName"
	FieldTemplateVersion    = "templateVersion"
	FieldTemplateParameters = "templateParameters"
	// ParamClusterName is the template parameter that names the CAPI Cluster (and the Porch package).
	ParamClusterName = "clusterName"
)

// Spec is a request's spec as stored; a field of the wrong type reads as its zero value.
type Spec struct {
	Name, Description, TemplateName, TemplateVersion string
	// TemplateParameters is the stored object's own map (nil when absent): read it, never change it.
	TemplateParameters map[string]any
}

// SpecOf reads spec without copying it.
func SpecOf(u *unstructured.Unstructured) Spec {
	spec, _ := u.Object[FieldSpec].(map[string]any)
	params, _ := spec[FieldTemplateParameters].(map[string]any)
	return Spec{
		Name:               str(spec[FieldName]),
		Description:        str(spec[FieldDescription]),
		TemplateName:       str(spec[FieldTemplateName]),
		TemplateVersion:    str(spec[FieldTemplateVersion]),
		TemplateParameters: params,
	}
}

// ClusterName is spec.templateParameters.clusterName, "" when absent or not a string.
func ClusterName(u *unstructured.Unstructured) string {
	return str(SpecOf(u).TemplateParameters[ParamClusterName])
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
