package query

import (
	"slices"
	"strings"
)

// Schema is the attribute tree of one answer type: what filters and attribute selectors may name. The
// provisioning API answers ProvisioningRequestInfo; the inventory API builds one Schema per type of its
// reference (Resource, ResourcePool, …) with Object.
type Schema struct {
	name  string
	root  *attrNode
	order []string // attribute names in the order error messages list them
}

// ProvisioningRequestInfo is the reference's ProvisioningRequestInfo (see infoSchema).
var ProvisioningRequestInfo = &Schema{name: "ProvisioningRequestInfo", root: infoSchema, order: []string{
	"provisioningRequestData", "provisioningRequestReference", "status",
	"provisionedResourceSet", "provisioningRequestId", "name", "description", "templateName",
	"templateVersion", "templateParameters", "updateTime", "message", "provisioningPhase",
	"nodeClusterId", "infrastructureResourceIds",
}}

// Attr describes one attribute for Object.
type Attr struct{ node *attrNode }

// Simple is a string, number, boolean, enum or date-time attribute; Array an array of them.
func Simple() Attr { return Attr{&attrNode{kind: SimpleAttr}} }
func Array() Attr  { return Attr{&attrNode{kind: SimpleArray}} }

// Members is an object with the given attributes.
func Members(m map[string]Attr) Attr {
	n := &attrNode{kind: ObjectAttr, children: make(map[string]*attrNode, len(m))}
	for k, a := range m {
		n.children[k] = a.node
	}
	return Attr{n}
}

// Freeform is an object whose members are unspecified (the reference's extensions, capabilities…).
func Freeform() Attr { return Attr{&attrNode{kind: ObjectAttr}} }

// Optional marks the attribute as cardinality 0..1: attribute selectors may leave it out.
func (a Attr) Optional() Attr { a.node.optional = true; return a }

// Object builds the Schema of a type called name with the given top-level attributes.
func Object(name string, attrs map[string]Attr) *Schema {
	s := &Schema{name: name, root: Members(attrs).node}
	seen := map[string]bool{}
	var walk func(n *attrNode)
	walk = func(n *attrNode) {
		keys := make([]string, 0, len(n.children))
		for k := range n.children {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				s.order = append(s.order, k)
			}
		}
		for _, k := range keys {
			walk(n.children[k])
		}
	}
	walk(s.root)
	return s
}

// Name is the type's name as error messages give it.
func (s *Schema) Name() string { return s.name }

// Selectable reports whether path is an attribute an attribute selector may leave out — an optional
// complex attribute, or one inside a free-form object — and returns the path of the outermost
// free-form object it is in or is (root), and what lies below it. SOL013 lets selectors drop only
// complex attributes of cardinality 0..N; everything else stays in every answer, which keeps every
// answer valid against its reference.
func (s *Schema) Selectable(path []string) (root, below []string, ok bool) {
	node := s.root
	for i, seg := range path {
		if node.kind == ObjectAttr && node.children == nil {
			return path[:i], path[i:], true
		}
		child, found := node.children[seg]
		if !found {
			return nil, nil, false
		}
		node = child
	}
	if node.kind == ObjectAttr && node.children == nil {
		return path, []string{}, true
	}
	return nil, nil, false
}

// FreeformRoots lists the paths of the free-form objects of the schema, and whether each is optional.
func (s *Schema) FreeformRoots() (paths [][]string, optional []bool) {
	var walk func(n *attrNode, at []string, opt bool)
	walk = func(n *attrNode, at []string, opt bool) {
		if n.kind == ObjectAttr && n.children == nil {
			paths = append(paths, slices.Clone(at))
			optional = append(optional, opt)
			return
		}
		keys := make([]string, 0, len(n.children))
		for k := range n.children {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walk(n.children[k], append(at, k), opt || n.children[k].optional)
		}
	}
	walk(s.root, nil, false)
	return paths, optional
}

// JoinPath renders an attribute path as callers write it.
func JoinPath(path []string) string { return strings.Join(path, "/") }
