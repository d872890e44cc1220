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

// JoinPath renders an attribute path as callers write it.
func JoinPath(path []string) string { return strings.Join(path, "/") }

// Node is one attribute of a Schema, for walking an answer along it. The zero Node is an attribute
// inside a free-form object (or one the schema does not declare): optional, anything below it.
type Node struct{ n *attrNode }

// Root is the type itself.
func (s *Schema) Root() Node { return Node{s.root} }

// Member is the attribute name of n (the zero Node when n is free-form or declares no such member).
func (n Node) Member(name string) Node {
	if n.n == nil {
		return Node{}
	}
	return Node{n.n.children[name]}
}

// Required reports whether the reference requires the attribute wherever its parent is present.
func (n Node) Required() bool { return n.n != nil && !n.n.optional }

// HasMembers reports whether the attribute is an object with declared members.
func (n Node) HasMembers() bool { return n.n != nil && n.n.kind == ObjectAttr && n.n.children != nil }
