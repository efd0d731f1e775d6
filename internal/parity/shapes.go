package parity

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Shapes are the declarations read down to fields and parameters: what
// the Types and Parameters sections of the table must account for.
type Shapes struct {
	// Types maps each type name to its fields' JSON names, in declaration
	// order: every exported type of sdk.d.ts and sdk-tools.d.ts whose shape
	// is an object (an interface, an object literal, an intersection, or a
	// union with object-literal members, whose fields are pooled), and the
	// control request types, which are not exported but are the wire.
	Types map[string][]string
	// Params maps a method ("Query.setModel") or an exported function
	// ("listSessions") to its parameters' names, in order.
	Params map[string][]string
	// Results maps a method ("Query.setPermissionMode") or an exported
	// function to the object types its result resolves to, once a
	// Promise, an array, undefined, null and void are taken off
	// ("SDKControlSetPermissionModeResponse"): the types whose Go
	// counterparts the Go function of its row must return. A result that
	// names no declared object type (void, a string, an inline object)
	// has none.
	Results map[string][]string
	// MessageTypes maps each Messages-section name ("system/init") to the
	// declared types it comes from ("SDKSystemMessage"). A row in the
	// Messages section must name a Go type the Types section gives each.
	MessageTypes map[string][]string
}

// shapeless are exported types with fields that other sections already
// account for, field by field: Options (the Options section) and Query
// (Query methods).
var shapeless = map[string]bool{"Options": true, "Query": true,
	// The Hook outputs section lists these field by field.
	"SyncHookJSONOutput": true, "AsyncHookJSONOutput": true}

// isShapeless also covers each event's hookSpecificOutput type, which
// the Hook outputs section lists field by field ("PreToolUse.updatedInput").
func isShapeless(name string) bool {
	return shapeless[name] || strings.HasSuffix(name, "HookSpecificOutput")
}

// ExtractShapes reads the fields of every object type and the parameters
// of every method of Query and every exported function.
func ExtractShapes(sdk, tools *File) (*Shapes, error) {
	s := &Shapes{Types: map[string][]string{}, Params: map[string][]string{}, Results: map[string][]string{}, MessageTypes: map[string][]string{}}
	addType := func(x *resolver, name string) {
		if isShapeless(name) {
			return
		}
		d := x.f.Decls[name]
		if d == nil || d.Kind == "function" || d.Kind == "const" {
			return
		}
		if f := x.shapeFields(d.Type); len(f) > 0 {
			s.Types[name] = f
		}
	}
	for _, file := range []*File{sdk, tools} {
		x := &resolver{f: file}
		for _, name := range file.Order {
			if d := file.Decls[name]; d.Exported {
				addType(x, name)
			}
		}
	}
	x := &resolver{f: sdk}
	inner := sdk.Decls["SDKControlRequestInner"]
	if inner == nil {
		return nil, fmt.Errorf("parity: sdk.d.ts declares no SDKControlRequestInner")
	}
	u, ok := inner.Type.(*Union)
	if !ok {
		return nil, fmt.Errorf("parity: SDKControlRequestInner is not a union")
	}
	for _, m := range u.Types {
		if r, ok := m.(*Ref); ok {
			addType(x, r.Name)
		}
	}

	q := sdk.Decls["Query"]
	if q == nil {
		return nil, fmt.Errorf("parity: sdk.d.ts declares no Query")
	}
	for _, f := range x.fields(q.Type, true) {
		if fn, ok := f.Type.(*Func); ok {
			s.Params["Query."+f.Name] = paramNames(fn)
			if rs := x.resultTypes(fn.Result, s.Types); len(rs) > 0 {
				s.Results["Query."+f.Name] = rs
			}
		}
	}
	for _, name := range sdk.Order {
		if d := sdk.Decls[name]; d.Kind == "function" && d.Exported {
			s.Params[name] = paramNames(d.Type.(*Func))
			if rs := x.resultTypes(d.Type.(*Func).Result, s.Types); len(rs) > 0 {
				s.Results[name] = rs
			}
		}
	}

	msg := sdk.Decls["SDKMessage"]
	if msg == nil {
		return nil, fmt.Errorf("parity: sdk.d.ts declares no SDKMessage")
	}
	var walk func(n Node, depth int)
	walk = func(n Node, depth int) {
		r, ok := n.(*Ref)
		if !ok || depth > 10 {
			return
		}
		if u, ok := x.resolve(r).(*Union); ok {
			if x.literalField(r, "type") == nil {
				for _, m := range u.Types {
					walk(m, depth+1)
				}
				return
			}
		}
		types := x.literalField(r, "type")
		subs := x.literalField(r, "subtype")
		for _, t := range types {
			if len(subs) == 0 {
				s.MessageTypes[t] = append(s.MessageTypes[t], r.Name)
			}
			for _, st := range subs {
				s.MessageTypes[t+"/"+st] = append(s.MessageTypes[t+"/"+st], r.Name)
			}
		}
	}
	walk(&Ref{Name: "SDKMessage"}, 0)
	return s, nil
}

// resultTypes lists the declared object types (those in types) a
// function's result resolves to: Promise<…> and arrays unwrapped, the
// members of a union each, undefined, null and void left out.
func (x *resolver) resultTypes(n Node, types map[string][]string) []string {
	var out []string
	var walk func(n Node, depth int)
	walk = func(n Node, depth int) {
		if depth > 10 || n == nil {
			return
		}
		switch t := n.(type) {
		case *Array:
			walk(t.Elem, depth+1)
		case *Union:
			for _, m := range t.Types {
				walk(m, depth+1)
			}
		case *Ref:
			switch t.Name {
			case "Promise", "Array", "ReadonlyArray":
				if len(t.Args) == 1 {
					walk(t.Args[0], depth+1)
				}
				return
			}
			if _, ok := types[t.Name]; ok {
				if !slices.Contains(out, t.Name) {
					out = append(out, t.Name)
				}
				return
			}
			// An alias of a union of declared types (A | B): each.
			if u, ok := x.resolve(t).(*Union); ok {
				walk(u, depth+1)
			}
		}
	}
	walk(n, 0)
	return out
}

func paramNames(fn *Func) []string {
	out := make([]string, 0, len(fn.Params))
	for _, p := range fn.Params {
		out = append(out, p.Name)
	}
	return out
}

// shapeFields lists the field names of an object-shaped type; for a
// union, those of its object-literal and intersection members, pooled
// (members that name other types are those types' business). Two kinds
// of field are left out: a discriminant (a field whose type is one
// string literal, such as "type" or "subtype": the Go type chosen for
// the object stands for it), and a field inherited from another exported
// object type through extends or &, which that type's row accounts for.
func (x *resolver) shapeFields(n Node) []string {
	var out []string
	add := func(fs []Field) {
		for _, f := range fs {
			if _, lit := x.resolve(f.Type).(*Literal); lit {
				continue
			}
			if !slices.Contains(out, f.Name) {
				out = append(out, f.Name)
			}
		}
	}
	// own lists n's fields but those inherited from an exported object
	// type.
	var own func(n Node, depth int)
	own = func(n Node, depth int) {
		if depth > 20 {
			return
		}
		switch t := x.resolve(n).(type) {
		case *Intersection:
			for _, m := range t.Types {
				if x.namedObject(m) {
					continue
				}
				own(m, depth+1)
			}
		case *Object:
			add(t.Fields)
			for _, b := range t.Extends {
				if !x.namedObject(b) {
					own(b, depth+1)
				}
			}
		default:
			if r, ok := n.(*Ref); ok && (r.Name == "Omit" || r.Name == "Pick") {
				add(x.fields(n, true))
			}
		}
	}
	if x.namedObject(n) {
		return nil // an alias of a type with a row of its own
	}
	switch t := x.resolve(n).(type) {
	case *Union:
		for _, m := range t.Types {
			switch x.resolve(m).(type) {
			case *Object, *Intersection:
				if _, named := m.(*Ref); !named {
					own(m, 0)
				}
			}
		}
	default:
		own(n, 0)
	}
	return out
}

// namedObject reports whether n names an exported type declared in the
// same file, which has a row of its own.
func (x *resolver) namedObject(n Node) bool {
	r, ok := n.(*Ref)
	if !ok {
		return false
	}
	d := x.f.Decls[r.Name]
	return d != nil && d.Exported && !isShapeless(r.Name) && (d.Kind == "type" || d.Kind == "interface")
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
