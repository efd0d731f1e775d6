package main

import (
	"bytes"
	"fmt"
	"go/format"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/tetherhq/tether/internal/parity"
)

// typeSpec says how one declared object type becomes a Go type: what
// the declaration cannot say (the Go name Tether has always used, the
// tool name, the documentation) and where Go needs more than it says.
// Keys of the tables are declaration paths: a declared type's name
// ("FileEditInput"), or for an object literal nested in it, the path of
// the field holding it ("TodoWriteInput.todos"; array elements are
// implied).
type typeSpec struct {
	// Go is the Go type's name; "" derives it (the declared name, or for
	// a nested object its parent's Go name and the field's).
	Go string
	// Tool is the name the model calls a tool by (tool inputs only); ""
	// is the declared name without "Input".
	Tool string
	// Aliases are more tool names whose input has this type (former
	// names the CLI still lists).
	Aliases []string
	// Doc is the Go type's doc comment, without the comment markers.
	Doc string
	// Fields say more about the declared fields, by JSON name, and add
	// fields the declaration does not have (Extra).
	Fields []fieldSpec
	// Order lists JSON names to write first, in this order, where the
	// Go type has always had another order than the declaration's (JSON
	// encodes fields in Go's order); the others follow as declared.
	Order []string
	// Skip leaves the declaration out: a hand-written type stands for it
	// (a union Go decodes with code of its own, or a type outside the
	// generated files).
	Skip string
}

// fieldSpec overrides what is derived for one field.
type fieldSpec struct {
	JSON string // the field's JSON name, as declared
	Go   string // the Go field's name, when not derived from JSON
	// Type is the Go type, when the declaration's is looser than what
	// Tether has always decoded (a tuple, a number that is a timestamp,
	// an optional boolean whose default is true, a named string type).
	Type string
	// Tag is the whole json tag, when not "JSON" plus ",omitempty" for
	// an optional field.
	Tag  string
	Doc  string // a doc comment above the field
	Note string // a comment after the field, on its line
	// Extra marks a field the declaration does not have (Tether decoded
	// it from an older SDK or from what the CLI really sends): kept, so
	// that the Go type changes only compatibly. Type is then required.
	Extra bool
}

// generator turns declarations into Go source.
type generator struct {
	decls *parity.File
	specs map[string]typeSpec
	// emitted lists the Go types written, to write a shared nested type
	// (Todo, ReviewFinding, DiffHunk…) once.
	emitted map[string]bool
	// used records the spec keys consulted, to report stale ones.
	used  map[string]bool
	buf   bytes.Buffer
	notes []string
	// errs are what the generator cannot decide: generation fails.
	errs []string
	// meta makes the top-level structs messages: they embed Meta (which
	// holds uuid and session_id, and the raw line) and leave out the
	// discriminants type and subtype.
	meta bool
	// discriminant is a field the top-level structs leave out: the Go
	// type stands for it (hook_event_name).
	discriminant string
	// depth bounds the resolution of type aliases.
	depth int
	// named maps the object literals of type aliases to their names: a
	// field of such a type has the spec of that name, not of its path.
	named map[*parity.Object]string
}

func newGenerator(decls *parity.File, specs map[string]typeSpec) *generator {
	g := &generator{decls: decls, specs: specs, emitted: map[string]bool{}, used: map[string]bool{}, named: map[*parity.Object]string{}}
	for name, d := range decls.Decls {
		if o, ok := d.Type.(*parity.Object); ok && d.Kind == "type" {
			g.named[o] = name
		}
	}
	return g
}

func (g *generator) notef(format string, args ...any) {
	g.notes = append(g.notes, fmt.Sprintf(format, args...))
}

func (g *generator) printf(format string, args ...any) { fmt.Fprintf(&g.buf, format, args...) }

// spec returns the spec at path, and marks it used.
func (g *generator) spec(path string) typeSpec {
	g.used[path] = true
	return g.specs[path]
}

// unionMembers lists the names a union type alias is made of.
func (g *generator) unionMembers(name string) ([]string, error) {
	d := g.decls.Decls[name]
	if d == nil {
		return nil, fmt.Errorf("the declarations have no %s", name)
	}
	u, ok := d.Type.(*parity.Union)
	if !ok {
		return nil, fmt.Errorf("%s is not a union", name)
	}
	var out []string
	for _, m := range u.Types {
		if r, ok := m.(*parity.Ref); ok {
			out = append(out, r.Name)
		}
	}
	return out, nil
}

// object returns the fields of the declared type name, when it is an
// object type (an interface or an object literal).
func (g *generator) object(name string) (*parity.Object, bool) {
	d := g.decls.Decls[name]
	if d == nil {
		return nil, false
	}
	o, ok := d.Type.(*parity.Object)
	return o, ok
}

// structType writes the Go struct for the object o at path, and the
// structs of the object literals nested in it.
func (g *generator) structType(path, goName string, o *parity.Object, defaultDoc string) {
	sp := g.spec(path)
	if g.emitted[goName] {
		return
	}
	g.emitted[goName] = true
	doc := sp.Doc
	if doc == "" {
		doc = defaultDoc
		g.notef("%s: no doc in the mapping; add one", path)
	}
	writeDoc(&g.buf, doc, "")
	type nested struct {
		path, goName string
		o            *parity.Object
	}
	var later []nested
	byJSON := map[string]fieldSpec{}
	for _, f := range sp.Fields {
		byJSON[f.JSON] = f
	}
	declared := map[string]bool{}
	fields := ordered(o.Fields, sp.Order)
	if len(fields) == 0 && len(sp.Fields) == 0 && !g.meta {
		g.printf("type %s struct{}\n\n", goName)
		return
	}
	isMessage := g.meta && !strings.Contains(path, ".")
	g.printf("type %s struct {\n", goName)
	if isMessage {
		g.printf("\tMeta\n")
	}
	for _, f := range fields {
		if _, isFunc := f.Type.(*parity.Func); isFunc {
			continue
		}
		if isMessage && metaField(f) {
			continue
		}
		if g.discriminant != "" && f.Name == g.discriminant && !strings.Contains(path, ".") {
			continue
		}
		declared[f.Name] = true
		fs := byJSON[f.Name]
		if fs.Extra {
			g.notef("%s.%s: declared now; drop Extra from the mapping", path, f.Name)
		}
		name := fs.Go
		if name == "" {
			name = goFieldName(f.Name)
		}
		typ := fs.Type
		if typ == "" {
			var obj *parity.Object
			typ, obj = g.goType(f.Type)
			if obj != nil {
				npath := path + "." + f.Name
				nname := g.specs[npath].Go
				if tsName, ok := g.named[obj]; ok {
					npath, nname = tsName, g.specs[tsName].Go
					if nname == "" {
						nname = tsName
					}
				}
				if nname == "" {
					nname = goName + name
				}
				if typ == "\x00" && f.Optional {
					typ = "*\x00" // omitempty omits no struct
				}
				typ = strings.Replace(typ, "\x00", nname, 1)
				if g.specs[npath].Skip == "" {
					later = append(later, nested{npath, nname, obj})
				} else {
					g.used[npath] = true
				}
			}
		} else if obj := g.inlineObject(f.Type); obj != nil {
			// The mapping names the Go type; write it unless it is
			// written by hand elsewhere.
			npath := path + "." + f.Name
			if tsName, ok := g.named[obj]; ok {
				npath = tsName
			}
			if ns, ok := g.specs[npath]; ok && ns.Skip == "" {
				later = append(later, nested{npath, ns.Go, obj})
			}
		}
		tag := fs.Tag
		if tag == "" {
			tag = f.Name
			if f.Optional {
				tag += ",omitempty"
			}
		}
		writeDoc(&g.buf, fs.Doc, "\t")
		g.printf("\t%s %s `json:%q`", name, typ, tag)
		if fs.Note != "" {
			g.printf(" // %s", fs.Note)
		}
		g.printf("\n")
	}
	for _, fs := range sp.Fields {
		if declared[fs.JSON] {
			continue
		}
		if !fs.Extra || fs.Go == "" || fs.Type == "" {
			// Dropping the field would change package claude
			// incompatibly.
			g.errs = append(g.errs, fmt.Sprintf("%s.%s: in the mapping but no longer declared; keep it with Extra, Go and Type", path, fs.JSON))
			continue
		}
		tag := fs.Tag
		if tag == "" {
			tag = fs.JSON + ",omitempty"
		}
		writeDoc(&g.buf, fs.Doc, "\t")
		g.printf("\t%s %s `json:%q`", fs.Go, fs.Type, tag)
		if fs.Note != "" {
			g.printf(" // %s", fs.Note)
		}
		g.printf("\n")
	}
	g.printf("}\n\n")
	for _, n := range later {
		doc := fmt.Sprintf("%s is what %s holds.", n.goName, n.path)
		if !strings.Contains(n.path, ".") {
			doc = fmt.Sprintf("%s is the declarations' %s.", n.goName, n.path)
		}
		g.structType(n.path, n.goName, n.o, doc)
	}
}

// metaField reports whether a message's field is Meta's (uuid,
// session_id) or a discriminant (type, subtype).
func metaField(f parity.Field) bool {
	switch f.Name {
	case "uuid", "session_id":
		return true
	case "type", "subtype":
		_, lit := f.Type.(*parity.Literal)
		return lit
	}
	return false
}

// ordered returns fields with those named in order first.
func ordered(fields []parity.Field, order []string) []parity.Field {
	if len(order) == 0 {
		return fields
	}
	out := make([]parity.Field, 0, len(fields))
	for _, name := range order {
		for _, f := range fields {
			if f.Name == name {
				out = append(out, f)
			}
		}
	}
	for _, f := range fields {
		if !slices.Contains(order, f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// inlineObject returns the object literal a field's type holds, directly
// or as an array's elements.
func (g *generator) inlineObject(n parity.Node) *parity.Object {
	switch t := n.(type) {
	case *parity.Ref:
		if d := g.decls.Decls[t.Name]; d != nil && d.Kind == "type" {
			if o, ok := d.Type.(*parity.Object); ok && len(o.Fields) > 0 {
				return o
			}
		}
	case *parity.Object:
		if len(t.Fields) > 0 {
			return t
		}
	case *parity.Array:
		return g.inlineObject(t.Elem)
	case *parity.Union:
		var o *parity.Object
		for _, m := range t.Types {
			if r, ok := m.(*parity.Ref); ok && r.Name == "null" {
				continue
			}
			if o != nil {
				return nil
			}
			o = g.inlineObject(m)
			if o == nil {
				return nil
			}
		}
		return o
	}
	return nil
}

// goType maps a declared type to a Go type. An object literal with
// fields becomes a named struct: the result then holds "\x00" where its
// name goes, and the object. What Go cannot say better (unions of
// shapes, tuples, records, unknown) is json.RawMessage.
func (g *generator) goType(n parity.Node) (string, *parity.Object) {
	switch t := n.(type) {
	case *parity.Ref:
		switch t.Name {
		case "string":
			return "string", nil
		case "number":
			return "int", nil
		case "boolean", "true", "false":
			return "bool", nil // true alone: a flag that is there or not (built_in?: true)
		case "Array":
			if len(t.Args) == 1 {
				e, o := g.goType(t.Args[0])
				return "[]" + e, o
			}
		}
		// A type alias of a scalar (UUID, a union of string literals) is
		// that scalar; of anything else, raw.
		if d := g.decls.Decls[t.Name]; d != nil && d.Kind == "type" && len(t.Args) == 0 && g.depth < 20 {
			if o, ok := d.Type.(*parity.Object); ok && len(o.Fields) > 0 {
				return "\x00", o // a named object type: a struct of its own
			}
			g.depth++
			typ, o := g.goType(d.Type)
			g.depth--
			if o == nil && !strings.HasPrefix(typ, "[]") {
				return typ, nil
			}
		}
		return "json.RawMessage", nil
	case *parity.Literal:
		return "string", nil
	case *parity.Opaque:
		switch {
		case strings.HasPrefix(t.Text, "`"): // a template literal type
			return "string", nil
		case len(t.Text) > 0 && (t.Text[0] >= '0' && t.Text[0] <= '9' || t.Text[0] == '-'):
			return "int", nil // a number literal type
		}
		return "json.RawMessage", nil
	case *parity.Array:
		e, o := g.goType(t.Elem)
		return "[]" + e, o
	case *parity.Object:
		if len(t.Fields) == 0 {
			return "json.RawMessage", nil
		}
		return "\x00", t
	case *parity.Union:
		var kinds []string
		var obj *parity.Object
		for _, m := range t.Types {
			if r, ok := m.(*parity.Ref); ok && (r.Name == "null" || r.Name == "undefined") {
				continue
			}
			k, o := g.goType(m)
			if o != nil {
				if obj != nil {
					return "json.RawMessage", nil
				}
				obj = o
			}
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) == 1 {
			return kinds[0], obj
		}
		return "json.RawMessage", nil
	}
	return "json.RawMessage", nil
}

// initialisms are the words Go spells in capitals.
var initialisms = map[string]string{
	"id": "ID", "url": "URL", "uri": "URI", "ms": "MS", "json": "JSON", "html": "HTML",
	"http": "HTTP", "api": "API", "mcp": "MCP", "uuid": "UUID", "ui": "UI", "md": "MD", "rag": "RAG", "usd": "USD",
}

// goFieldName derives a Go field name from a JSON name: words split at
// "_", "-" and lower-to-upper case changes, each capitalised, initialisms
// in capitals ("resumeFromRunId" → ResumeFromRunID, "timeout_ms" →
// TimeoutMS).
func goFieldName(j string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	rs := []rune(j)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-':
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	var b strings.Builder
	for _, w := range words {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		if up, ok := initialisms[strings.ToLower(strings.TrimSuffix(w, "s"))]; ok && len(w) > 2 {
			b.WriteString(up + "s") // uuids → UUIDs
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	if b.Len() == 0 {
		return "X"
	}
	return b.String()
}

// writeDoc writes a comment, wrapped at 72 columns, each line indented.
func writeDoc(b *bytes.Buffer, doc, indent string) {
	if doc == "" {
		return
	}
	for para := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(para, "\t") { // code: as is
			fmt.Fprintf(b, "%s//%s\n", indent, para)
			continue
		}
		if para == "" {
			fmt.Fprintf(b, "%s//\n", indent)
			continue
		}
		line := ""
		for w := range strings.FieldsSeq(para) {
			if line != "" && len(indent)*4+len(line)+1+len(w) > 72 {
				fmt.Fprintf(b, "%s// %s\n", indent, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		fmt.Fprintf(b, "%s// %s\n", indent, line)
	}
}

// source formats the generated file: header, package, imports, body.
func source(version, what string, body []byte) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/sdkgen from @anthropic-ai/claude-agent-sdk %s (%s). DO NOT EDIT.\n\n", version, what)
	b.WriteString("package claude\n\n")
	if bytes.Contains(body, []byte("json.")) {
		b.WriteString("import \"encoding/json\"\n\n")
	}
	b.Write(body)
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting %s: %w\n%s", what, err, b.Bytes())
	}
	return out, nil
}

// unusedSpecs lists the mapping's keys the generation did not consult:
// types or nested objects the declarations no longer have.
func (g *generator) unusedSpecs() []string {
	var out []string
	for k := range g.specs {
		if !g.used[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ownFields lists the fields of the object literals of an intersection
// (nested ones included), leaving out the named types it extends.
func ownFields(n parity.Node) []parity.Field {
	switch t := n.(type) {
	case *parity.Object:
		return t.Fields
	case *parity.Intersection:
		var out []parity.Field
		for _, m := range t.Types {
			out = append(out, ownFields(m)...)
		}
		return out
	}
	return nil
}

// table writes the map a decoder looks a type up in: each row's key
// expression and the Go type a new value of which it makes, as an iface.
func (g *generator) table(doc, name, key, iface string, rows [][2]string) {
	writeDoc(&g.buf, doc, "")
	g.printf("var %s = map[%s]func() %s{\n", name, key, iface)
	for _, r := range rows {
		g.printf("\t%s: func() %s { return new(%s) },\n", r[0], iface, r[1])
	}
	g.printf("}\n")
}
