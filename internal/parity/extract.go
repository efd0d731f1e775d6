package parity

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Sections of the parity table, in the order docs/parity.md lists them.
// Each is one kind of name the TypeScript SDK declares.
const (
	SectionOptions     = "Options"          // fields of Options
	SectionQuery       = "Query methods"    // methods of the Query object (a session)
	SectionFunctions   = "Functions"        // exported functions
	SectionControl     = "Control requests" // control request subtypes, either direction
	SectionMessages    = "Messages"         // SDKMessage types, "type" or "type/subtype"
	SectionHookEvents  = "Hook events"      // HookEvent names
	SectionHookOutputs = "Hook outputs"     // output fields: "field" or "Event.field"
	SectionToolInputs  = "Built-in tool inputs"
	SectionToolOutputs = "Built-in tool outputs"
	// SectionTypes holds a row per object type ("AgentDefinition": the Go
	// types whose JSON fields stand for its fields) and a row per field
	// those Go types lack ("AgentDefinition.memory"). CheckShapes reads it.
	SectionTypes = "Types"
	// SectionParams holds a row per parameter of a method or function
	// that its Go counterpart's parameters do not match by name
	// ("Query.setMaxThinkingTokens(thinkingDisplay)").
	SectionParams = "Parameters"
)

// Sections lists every section in table order.
var Sections = []string{
	SectionOptions, SectionQuery, SectionFunctions, SectionControl, SectionMessages,
	SectionHookEvents, SectionHookOutputs, SectionToolInputs, SectionToolOutputs,
	SectionTypes, SectionParams,
}

// nameSections are the sections Check compares name by name with
// Extract's lists; the others are CheckShapes's.
func nameSection(s string) bool { return s != SectionTypes && s != SectionParams }

// Names maps each section to the names the declarations hold, sorted.
type Names map[string][]string

// Extract lists the names in sdk.d.ts (sdk) and sdk-tools.d.ts (tools).
// A declaration the extraction relies on that is missing or has an
// unexpected shape is an error: a newer SDK that reorganised its types
// must be looked at, not silently read as "nothing new".
func Extract(sdk, tools *File) (Names, error) {
	n := Names{}
	x := &resolver{f: sdk}
	add := func(section, name string) {
		if name != "" && !slices.Contains(n[section], name) {
			n[section] = append(n[section], name)
		}
	}

	// Options and the Query interface: their members.
	for _, s := range []struct{ section, decl string }{{SectionOptions, "Options"}, {SectionQuery, "Query"}} {
		d := sdk.Decls[s.decl]
		if d == nil {
			return nil, fmt.Errorf("parity: sdk.d.ts declares no %s", s.decl)
		}
		fields := x.fields(d.Type, true)
		if len(fields) == 0 {
			return nil, fmt.Errorf("parity: %s has no members", s.decl)
		}
		for _, f := range fields {
			add(s.section, f.Name)
		}
	}

	// Exported functions.
	for _, name := range sdk.Order {
		if d := sdk.Decls[name]; d.Kind == "function" && d.Exported {
			add(SectionFunctions, name)
		}
	}

	// Control requests: the "subtype" of each member of the request union.
	inner := sdk.Decls["SDKControlRequestInner"]
	if inner == nil {
		return nil, fmt.Errorf("parity: sdk.d.ts declares no SDKControlRequestInner")
	}
	for _, m := range x.members(inner.Type) {
		subs := x.literalField(m, "subtype")
		if len(subs) == 0 {
			return nil, fmt.Errorf("parity: a control request type has no subtype: %s", describe(m))
		}
		for _, s := range subs {
			add(SectionControl, s)
		}
	}

	// Messages: "type", or "type/subtype" for those that have a subtype.
	msg := sdk.Decls["SDKMessage"]
	if msg == nil {
		return nil, fmt.Errorf("parity: sdk.d.ts declares no SDKMessage")
	}
	for _, m := range x.members(msg.Type) {
		types := x.literalField(m, "type")
		if len(types) == 0 {
			return nil, fmt.Errorf("parity: a message type has no type: %s", describe(m))
		}
		subs := x.literalField(m, "subtype")
		for _, t := range types {
			if len(subs) == 0 {
				add(SectionMessages, t)
			}
			for _, s := range subs {
				add(SectionMessages, t+"/"+s)
			}
		}
	}

	// Hook events, and the output fields: the common ones and each
	// event's hookSpecificOutput.
	ev := sdk.Decls["HookEvent"]
	if ev == nil {
		return nil, fmt.Errorf("parity: sdk.d.ts declares no HookEvent")
	}
	for _, e := range x.literals(ev.Type) {
		add(SectionHookEvents, e)
	}
	for _, out := range []string{"SyncHookJSONOutput", "AsyncHookJSONOutput"} {
		d := sdk.Decls[out]
		if d == nil {
			return nil, fmt.Errorf("parity: sdk.d.ts declares no %s", out)
		}
		for _, f := range x.fields(d.Type, false) {
			if f.Name == "hookSpecificOutput" {
				for _, m := range x.members(f.Type) {
					events := x.literalField(m, "hookEventName")
					if len(events) != 1 {
						return nil, fmt.Errorf("parity: a hookSpecificOutput type has no single hookEventName: %s", describe(m))
					}
					for _, g := range x.fields(m, false) {
						if g.Name != "hookEventName" {
							add(SectionHookOutputs, events[0]+"."+g.Name)
						}
					}
				}
				continue
			}
			add(SectionHookOutputs, f.Name)
		}
	}

	// Built-in tools: the input and output type names.
	tx := &resolver{f: tools}
	for _, s := range []struct{ section, decl string }{{SectionToolInputs, "ToolInputSchemas"}, {SectionToolOutputs, "ToolOutputSchemas"}} {
		d := tools.Decls[s.decl]
		if d == nil {
			return nil, fmt.Errorf("parity: sdk-tools.d.ts declares no %s", s.decl)
		}
		u, ok := d.Type.(*Union)
		if !ok {
			return nil, fmt.Errorf("parity: %s is not a union", s.decl)
		}
		for _, m := range u.Types {
			r, ok := m.(*Ref)
			if !ok {
				return nil, fmt.Errorf("parity: %s has a member that is not a type name: %s", s.decl, describe(m))
			}
			if r.Name == "ToolOutputSchemas" || r.Name == "ToolInputSchemas" {
				continue
			}
			if tx.f.Decls[r.Name] == nil {
				return nil, fmt.Errorf("parity: %s names %s, which is not declared", s.decl, r.Name)
			}
			add(s.section, r.Name)
		}
	}

	for k := range n {
		sort.Strings(n[k])
	}
	return n, nil
}

// resolver follows type names through one file's declarations.
type resolver struct {
	f *File
	// nested counts fields calls in progress: Omit and Pick recurse, and
	// an alias may name itself through them.
	nested int
}

// resolve follows references to aliases, up to a bound (aliases can be
// cyclic in hostile input).
func (x *resolver) resolve(n Node) Node {
	for range 50 {
		r, ok := n.(*Ref)
		if !ok {
			return n
		}
		switch r.Name {
		case "Partial", "Required", "Readonly":
			if len(r.Args) == 1 {
				n = r.Args[0]
				continue
			}
		}
		d := x.f.Decls[r.Name]
		if d == nil || d.Kind == "function" {
			return n
		}
		n = d.Type
	}
	return n
}

// members flattens a union, following aliases to unions. Each alias is
// followed once, so self-referencing unions end.
func (x *resolver) members(n Node) []Node {
	var out []Node
	seen := map[string]bool{}
	var walk func(Node)
	walk = func(n Node) {
		if r, ok := n.(*Ref); ok {
			if seen[r.Name] {
				return
			}
			seen[r.Name] = true
		}
		if u, ok := x.resolve(n).(*Union); ok {
			for _, m := range u.Types {
				walk(m)
			}
			return
		}
		out = append(out, n)
	}
	walk(n)
	return out
}

// fields lists an object type's members, through aliases, intersections,
// interface bases (withBases) and the Omit/Pick utility types.
func (x *resolver) fields(n Node, withBases bool) []Field {
	if x.nested > 20 {
		return nil
	}
	x.nested++
	defer func() { x.nested-- }()
	var out []Field
	seen := map[string]bool{}
	visited := map[string]bool{} // aliases already walked: each once
	var walk func(Node, int)
	walk = func(n Node, depth int) {
		if depth > 50 {
			return
		}
		if r, ok := n.(*Ref); ok {
			if visited[r.Name] && r.Name != "Omit" && r.Name != "Pick" {
				return
			}
			visited[r.Name] = true
		}
		if r, ok := n.(*Ref); ok && (r.Name == "Omit" || r.Name == "Pick") && len(r.Args) == 2 {
			keys := x.literals(r.Args[1])
			for _, f := range x.fields(r.Args[0], withBases) {
				if slices.Contains(keys, f.Name) == (r.Name == "Pick") && !seen[f.Name] {
					seen[f.Name] = true
					out = append(out, f)
				}
			}
			return
		}
		switch t := x.resolve(n).(type) {
		case *Object:
			for _, f := range t.Fields {
				if !seen[f.Name] {
					seen[f.Name] = true
					out = append(out, f)
				}
			}
			if withBases {
				for _, b := range t.Extends {
					walk(b, depth+1)
				}
			}
		case *Intersection:
			for _, m := range t.Types {
				walk(m, depth+1)
			}
		}
	}
	walk(n, 0)
	return out
}

// literals lists the string literals of a union of them.
func (x *resolver) literals(n Node) []string {
	var out []string
	for _, m := range x.members(n) {
		if l, ok := x.resolve(m).(*Literal); ok {
			out = append(out, l.Value)
		}
	}
	return out
}

// literalField is the string literal values of an object's field (a
// discriminant such as "type" or "subtype").
func (x *resolver) literalField(n Node, name string) []string {
	for _, f := range x.fields(n, true) {
		if f.Name == name {
			return x.literals(f.Type)
		}
	}
	return nil
}

func describe(n Node) string {
	switch t := n.(type) {
	case *Ref:
		return t.Name
	case *Object:
		names := make([]string, 0, len(t.Fields))
		for _, f := range t.Fields {
			names = append(names, f.Name)
		}
		return "{" + strings.Join(names, ", ") + "}"
	}
	return fmt.Sprintf("%T", n)
}
