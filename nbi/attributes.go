package nbi

import (
	"fmt"
	"strings"
)

// attrKind is what the reference says an attribute of ProvisioningRequestInfo holds.
type attrKind int

const (
	simpleAttr   attrKind = iota // string (or enum, date-time)
	simpleArray                  // array of strings
	objectAttr                   // object with known members
	freeformAttr                 // inside templateParameters: anything, every member optional
)

// attrNode is one attribute of the reference's ProvisioningRequestInfo.
type attrNode struct {
	kind     attrKind
	children map[string]*attrNode
}

// infoSchema mirrors the reference's ProvisioningRequestInfo. Every attribute it declares is required, so
// the only optional (cardinality 0..1) complex attributes — the ones SOL013 attribute selectors may
// leave out — are those inside the free-form templateParameters.
var infoSchema = &attrNode{kind: objectAttr, children: map[string]*attrNode{
	"provisioningRequestData": {kind: objectAttr, children: map[string]*attrNode{
		"provisioningRequestId": {kind: simpleAttr},
		"name":                  {kind: simpleAttr},
		"description":           {kind: simpleAttr},
		"templateName":          {kind: simpleAttr},
		"templateVersion":       {kind: simpleAttr},
		"templateParameters":    {kind: objectAttr}, // members: freeformAttr
	}},
	"provisioningRequestReference": {kind: simpleAttr},
	"status": {kind: objectAttr, children: map[string]*attrNode{
		"updateTime":        {kind: simpleAttr},
		"message":           {kind: simpleAttr},
		"provisioningPhase": {kind: simpleAttr},
	}},
	"provisionedResourceSet": {kind: objectAttr, children: map[string]*attrNode{
		"nodeClusterId":             {kind: simpleAttr},
		"infrastructureResourceIds": {kind: simpleArray},
	}},
}}

// templateParametersPath is where the free-form part of the Info starts.
var templateParametersPath = []string{"provisioningRequestData", "templateParameters"}

// resolveAttr finds what path names in ProvisioningRequestInfo: its kind and whether the reference
// requires it. Anything below templateParameters is free-form and optional.
func resolveAttr(path []string) (kind attrKind, mandatory bool, err error) {
	node := infoSchema
	for i, seg := range path {
		if node.kind == objectAttr && node.children == nil { // templateParameters
			return freeformAttr, false, nil
		}
		if node.kind != objectAttr {
			return 0, false, fmt.Errorf("%q is not an attribute of ProvisioningRequestInfo: %s has no members",
				strings.Join(path, "/"), strings.Join(path[:i], "/"))
		}
		child, ok := node.children[seg]
		if !ok {
			return 0, false, fmt.Errorf("%q is not an attribute of ProvisioningRequestInfo%s",
				strings.Join(path[:i+1], "/"), knownBelow(node, path[:i]))
		}
		node = child
	}
	return node.kind, true, nil
}

// knownBelow lists the attributes a wrong path segment could have been, for the error message.
func knownBelow(node *attrNode, at []string) string {
	names := make([]string, 0, len(node.children))
	for _, n := range []string{"provisioningRequestData", "provisioningRequestReference", "status",
		"provisionedResourceSet", "provisioningRequestId", "name", "description", "templateName",
		"templateVersion", "templateParameters", "updateTime", "message", "provisioningPhase",
		"nodeClusterId", "infrastructureResourceIds"} {
		if _, ok := node.children[n]; ok {
			names = append(names, n)
		}
	}
	where := "ProvisioningRequestInfo"
	if len(at) > 0 {
		where = strings.Join(at, "/")
	}
	return fmt.Sprintf(" (%s has %s)", where, strings.Join(names, ", "))
}

// splitAttrPath splits an attribute path "a/b/c" into its names; none may be empty.
func splitAttrPath(p string) ([]string, error) {
	if p == "" {
		return nil, fmt.Errorf("an attribute name is empty")
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("attribute path %q has an empty name", p)
		}
	}
	return segs, nil
}
