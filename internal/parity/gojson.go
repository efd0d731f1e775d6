package parity

import (
	"go/ast"
	"go/token"
	"reflect"
	"strconv"
	"strings"
)

// GoShapes is what the Types and Parameters sections are checked
// against, read from the Go source: each struct type's JSON field names,
// each Go field's own JSON name, and each function's and method's
// parameters.
type GoShapes struct {
	// JSON maps a struct type ("AgentDefinition", "host.Session") to the
	// JSON names of its fields, those promoted from embedded structs
	// included. A field without a json tag has its Go name, as
	// encoding/json gives it; a field tagged "-" has none.
	JSON map[string]map[string]bool
	// FieldJSON maps "Type.Field" to the JSON name of its json tag, for
	// the tagged fields.
	FieldJSON map[string]string
	// Fields holds every exported struct field, as "Type.Field".
	Fields map[string]bool
	// Params maps a function ("ListSessions") or method
	// ("Session.SetModel") to its parameters: each name, lower-cased, and
	// for a parameter whose type is a struct of the same package, that
	// type's name (its fields count as parameters too).
	Params map[string][]GoParam
	// Results maps a function or method to the named types of its
	// results, pointers and slices taken off ("Session.InterruptTurn" →
	// "InterruptResult", "error"), and FieldType a struct field
	// ("InitializeResponse.Account") to its named type ("AccountInfo"):
	// what a Query method's row must return.
	Results   map[string][]string
	FieldType map[string]string
}

// GoParam is one parameter of a Go function.
type GoParam struct {
	Name string // as written
	Type string // the named type, without pointer or package; "" if none
}

// ReadGoShapes adds the package in dir to into, with names prefixed by
// prefix as ReadGoNames does.
func ReadGoShapes(dir, prefix string, into *GoShapes) error {
	if into.JSON == nil {
		into.JSON = map[string]map[string]bool{}
		into.FieldJSON = map[string]string{}
		into.Fields = map[string]bool{}
		into.Params = map[string][]GoParam{}
	}
	if into.Results == nil {
		into.Results = map[string][]string{}
		into.FieldType = map[string]string{}
	}
	files, err := parseDir(dir)
	if err != nil {
		return err
	}
	structs := map[string]*ast.StructType{}
	bodies := map[string]*ast.BlockStmt{}   // exported function → body
	codecs := map[string][]*ast.BlockStmt{} // type → bodies of its JSON methods
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							structs[ts.Name.Name] = st
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) > 0 && jsonMethods[d.Name.Name] && d.Body != nil {
					r := recvName(d.Recv.List[0].Type)
					codecs[r] = append(codecs[r], d.Body)
				}
				// decodeHookInput(…) (*HookInput, error) reads a HookInput
				// from the wire: its body says how one looks in JSON.
				if d.Recv == nil && d.Body != nil && strings.HasPrefix(d.Name.Name, "decode") &&
					d.Type.Results != nil && len(d.Type.Results.List) > 0 {
					if r := recvName(d.Type.Results.List[0].Type); r != "" {
						codecs[r] = append(codecs[r], d.Body)
					}
				}
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) > 0 {
					name = recvName(d.Recv.List[0].Type) + "." + name
				}
				var ps []GoParam
				for _, p := range d.Type.Params.List {
					typ := recvName(p.Type)
					if el, ok := p.Type.(*ast.Ellipsis); ok {
						typ = recvName(el.Elt)
					}
					if len(p.Names) == 0 {
						ps = append(ps, GoParam{Type: typ})
					}
					for _, n := range p.Names {
						ps = append(ps, GoParam{Name: n.Name, Type: typ})
					}
				}
				into.Params[prefix+name] = ps
				if d.Type.Results != nil {
					var rs []string
					for _, r := range d.Type.Results.List {
						for _, n := range typeNames(r.Type) {
							rs = append(rs, prefix+n)
						}
					}
					into.Results[prefix+name] = rs
				}
				if d.Body != nil {
					bodies[name] = d.Body
				}
			}
		}
	}
	var jsonNames func(name string, depth int) map[string]bool
	jsonNames = func(name string, depth int) map[string]bool {
		out := map[string]bool{}
		st := structs[name]
		if st == nil || depth > 10 {
			return out
		}
		for _, f := range st.Fields.List {
			tag := ""
			if f.Tag != nil {
				tag = reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
			}
			jname, _, _ := strings.Cut(tag, ",")
			if len(f.Names) == 0 { // embedded
				e := recvName(f.Type)
				if jname == "" && tag != "-" {
					for k := range jsonNames(e, depth+1) {
						out[k] = true
					}
					continue
				}
				if jname != "-" && jname != "" {
					out[jname] = true
				}
				continue
			}
			for _, n := range f.Names {
				if !n.IsExported() || tag == "-" {
					continue
				}
				j := jname
				if j == "" {
					j = n.Name
				}
				out[j] = true
				if name != "\x00" {
					into.Fields[prefix+name+"."+n.Name] = true
					if tn := typeName(f.Type); tn != "" {
						into.FieldType[prefix+name+"."+n.Name] = prefix + tn
					}
				}
				if name != "\x00" && jname != "" {
					into.FieldJSON[prefix+name+"."+n.Name] = j
				}
			}
		}
		return out
	}
	// bodyNames are the JSON names a function body writes: those of the
	// struct types written in it (the anonymous structs a control request
	// is built from, the wire struct a MarshalJSON fills), of the named
	// struct types it mentions, and the string keys of the maps it builds
	// (map[string]any{"command": …}, m["env"] = …).
	bodyNames := func(body *ast.BlockStmt, out map[string]bool) {
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StructType:
				st := &ast.StructType{Fields: n.Fields}
				structs["\x00"] = st
				for k := range jsonNames("\x00", 0) {
					out[k] = true
				}
				delete(structs, "\x00")
			case *ast.Ident:
				if _, ok := structs[n.Name]; ok {
					for k := range jsonNames(n.Name, 0) {
						out[k] = true
					}
				}
			case *ast.CompositeLit:
				if _, ok := n.Type.(*ast.MapType); ok {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if k, ok := stringLit(kv.Key); ok {
								out[k] = true
							}
						}
					}
				}
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if ix, ok := l.(*ast.IndexExpr); ok {
						if k, ok := stringLit(ix.Index); ok {
							out[k] = true
						}
					}
				}
			}
			return true
		})
	}
	for name := range structs {
		if ast.IsExported(name) {
			js := jsonNames(name, 0)
			// A type with its own JSON methods has the names they
			// write and read, which its untagged fields do not show.
			for _, b := range codecs[name] {
				bodyNames(b, js)
			}
			into.JSON[prefix+name] = js
		}
	}
	// A function's JSON names let a control request's row name the
	// method that sends it.
	for name, body := range bodies {
		out := map[string]bool{}
		bodyNames(body, out)
		if len(out) > 0 {
			into.JSON[prefix+name] = out
		}
	}
	return nil
}

// typeNames are the named types a result type yields: typeName's, and
// those of a generic type's arguments (iter.Seq2[SessionEntry, error]
// yields SessionEntry and error).
func typeNames(e ast.Expr) []string {
	var out []string
	switch t := e.(type) {
	case *ast.IndexExpr:
		out = append(out, typeNames(t.Index)...)
	case *ast.IndexListExpr:
		for _, ix := range t.Indices {
			out = append(out, typeNames(ix)...)
		}
	}
	if n := typeName(e); n != "" {
		out = append(out, n)
	}
	return out
}

// typeName is the named type of a type expression with pointers, slices
// and arrays taken off ("*[]ModelInfo" → "ModelInfo"); "" for others.
func typeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ArrayType:
			e = t.Elt
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// jsonMethods are the methods whose bodies say how a type looks in JSON.
var jsonMethods = map[string]bool{
	"MarshalJSON": true, "UnmarshalJSON": true, "MarshalJSONTo": true, "UnmarshalJSONFrom": true,
	"decode": true, "encode": true, "wire": true, "toWire": true,
	// A permission answer's body is built by its permissionResponse.
	"permissionResponse": true,
}

// stringLit returns the value of a string literal.
func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}
