package query

import (
	"fmt"
	"strings"
)

// AttrKind is what the reference says an attribute of ProvisioningRequestInfo holds.
type AttrKind int

const (
	SimpleAttr   AttrKind = iota // string (or enum, date-time)
	SimpleArray                  // array of strings
	ObjectAttr                   // object with known members
	FreeformAttr                 // inside templateParameters: anything, every member optional
)

// attrNode is one attribute of an answer type (the reference's ProvisioningRequestInfo, or a Schema
// built with Object). An ObjectAttr without children is free-form: anything goes below it.
type attrNode struct {
	kind     AttrKind
	children map[string]*attrNode
	optional bool // cardinality 0..1 (only Schemas built with Object have optional attributes)
}

// infoSchema mirrors the reference's ProvisioningRequestInfo, in the shape package nbi's attributes()
// gives an Info for Filter.Match. Every attribute it declares is required, so the only optional
// (cardinality 0..1) complex attributes — the ones SOL013 attribute selectors may leave out — are those
// inside the free-form templateParameters.
var infoSchema = &attrNode{kind: ObjectAttr, children: map[string]*attrNode{
	"provisioningRequestData": {kind: ObjectAttr, children: map[string]*attrNode{
		"provisioningRequestId": {kind: SimpleAttr},
		"name":                  {kind: SimpleAttr},
		"description":           {kind: SimpleAttr},
		"templateName":          {kind: SimpleAttr},
		"templateVersion":       {kind: SimpleAttr},
		"templateParameters":    {kind: ObjectAttr}, // members: FreeformAttr
	}},
	"provisioningRequestReference": {kind: SimpleAttr},
	"status": {kind: ObjectAttr, children: map[string]*attrNode{
		"updateTime":        {kind: SimpleAttr},
		"message":           {kind: SimpleAttr},
		"provisioningPhase": {kind: SimpleAttr},
	}},
	"provisionedResourceSet": {kind: ObjectAttr, children: map[string]*attrNode{
		"nodeClusterId":             {kind: SimpleAttr},
		"infrastructureResourceIds": {kind: SimpleArray},
	}},
}}

// InTemplateParameters reports whether path is templateParameters or below it, the free-form part of the
// Info, and returns the rest of the path below templateParameters.
func InTemplateParameters(path []string) (below []string, ok bool) {
	if len(path) >= 2 && path[0] == "provisioningRequestData" && path[1] == "templateParameters" {
		return path[2:], true
	}
	return nil, false
}

// ResolveAttr finds what path names in ProvisioningRequestInfo: its kind and whether the reference
// requires it. Anything below templateParameters is free-form and optional. A path naming nothing is a
// 400 *Error that lists what could have been meant.
func ResolveAttr(path []string) (kind AttrKind, mandatory bool, err error) {
	return ProvisioningRequestInfo.Resolve(path)
}

// Resolve finds what path names in the schema's type: its kind and whether the reference requires it
// (an attribute is mandatory when it and every attribute on the way to it are). Anything below a
// free-form object is FreeformAttr and optional. A path naming nothing is a 400 *Error that lists what
// could have been meant.
func (s *Schema) Resolve(path []string) (kind AttrKind, mandatory bool, err error) {
	node := s.root
	mandatory = true
	for i, seg := range path {
		if node.kind == ObjectAttr && node.children == nil { // free-form (templateParameters, extensions)
			return FreeformAttr, false, nil
		}
		if node.kind != ObjectAttr {
			return 0, false, errorf(statusBadRequest, "%q is not an attribute of %s: %s has no members",
				strings.Join(path, "/"), s.name, strings.Join(path[:i], "/"))
		}
		child, ok := node.children[seg]
		if !ok {
			return 0, false, errorf(statusBadRequest, "%q is not an attribute of %s%s",
				strings.Join(path[:i+1], "/"), s.name, s.knownBelow(node, path[:i]))
		}
		node = child
		mandatory = mandatory && !node.optional
	}
	return node.kind, mandatory, nil
}

// knownBelow lists the attributes a wrong path segment could have been, for the error message.
func (s *Schema) knownBelow(node *attrNode, at []string) string {
	names := make([]string, 0, len(node.children))
	for _, n := range s.order {
		if _, ok := node.children[n]; ok {
			names = append(names, n)
		}
	}
	where := s.name
	if len(at) > 0 {
		where = strings.Join(at, "/")
	}
	return fmt.Sprintf(" (%s has %s)", where, strings.Join(names, ", "))
}

// SplitAttrPath splits an attribute path "a/b/c" into its names; none may be empty (a 400 *Error).
func SplitAttrPath(p string) ([]string, error) {
	if p == "" {
		return nil, errorf(statusBadRequest, "an attribute name is empty")
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" {
			return nil, errorf(statusBadRequest, "attribute path %q has an empty name", p)
		}
	}
	return segs, nil
}
