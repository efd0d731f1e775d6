// Package parity reads the official TypeScript Agent SDK's type
// declarations (sdk.d.ts, sdk-tools.d.ts) as data, and checks them against
// the table in docs/parity.md and the claude package's exported names. Its
// test is what keeps Tether's parity claims true: a name the SDK declares
// that the table does not list, or a table entry naming a Go identifier
// that does not exist, fails it.
//
// The declaration reader handles the subset of TypeScript a .d.ts file
// holds: type aliases, interfaces, unions, intersections, object literals,
// generics, function types and string literals. What it cannot make sense
// of becomes an opaque node, skipped by bracket balance, so a construct a
// newer SDK adds degrades one type rather than failing the whole file.
package parity

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a tsToken.
type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString // a quoted string; text is its value
	tokNumber
	tokPunct // one or more punctuation characters (=>, ..., or one char)
	tokTemplate
)

type tsToken struct {
	kind tokKind
	text string
	pos  int
}

// lex splits src into tokens, dropping whitespace and comments. It never
// fails: an unterminated string or comment ends at EOF.
func lex(src string) []tsToken {
	var toks []tsToken
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "//"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
			} else {
				i += j + 1
			}
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				i = len(src)
			} else {
				i += j + 4
			}
		case c == '\'' || c == '"':
			start := i
			var b strings.Builder
			i++
			for i < len(src) && src[i] != c {
				if src[i] == '\\' && i+1 < len(src) {
					i++
				}
				b.WriteByte(src[i])
				i++
			}
			i++ // the closing quote
			toks = append(toks, tsToken{tokString, b.String(), start})
		case c == '`':
			// Template literal types: kept whole, with ${…} nesting.
			start := i
			i++
			depth := 0
			for i < len(src) {
				if src[i] == '\\' {
					i += 2
					continue
				}
				if depth == 0 && src[i] == '`' {
					break
				}
				if strings.HasPrefix(src[i:], "${") {
					depth++
					i += 2
					continue
				}
				if depth > 0 && src[i] == '}' {
					depth--
				}
				i++
			}
			i++
			toks = append(toks, tsToken{tokTemplate, src[start:min(i, len(src))], start})
		case c >= '0' && c <= '9':
			start := i
			for i < len(src) && (isIdentByte(src[i]) || src[i] == '.') {
				i++
			}
			toks = append(toks, tsToken{tokNumber, src[start:i], start})
		case isIdentStart(src, i):
			start := i
			for i < len(src) {
				r, n := utf8.DecodeRuneInString(src[i:])
				if !(r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
					break
				}
				i += n
			}
			toks = append(toks, tsToken{tokIdent, src[start:i], start})
		default:
			start := i
			switch {
			case strings.HasPrefix(src[i:], "=>"), strings.HasPrefix(src[i:], "?."):
				i += 2
			case strings.HasPrefix(src[i:], "..."):
				i += 3
			default:
				_, n := utf8.DecodeRuneInString(src[i:])
				i += n
			}
			toks = append(toks, tsToken{tokPunct, src[start:i], start})
		}
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdentStart(src string, i int) bool {
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r == '_' || r == '$' || unicode.IsLetter(r)
}

// Node is a parsed type expression.
type Node interface{ node() }

// Object is an object literal type or an interface body.
type Object struct {
	Fields []Field
	// Extends are an interface's base types.
	Extends []Node
}

// Field is a property or method of an object type.
type Field struct {
	Name     string
	Optional bool
	Type     Node
}

// Union is A | B | ….
type Union struct{ Types []Node }

// Intersection is A & B & ….
type Intersection struct{ Types []Node }

// Ref names a type, with its type arguments.
type Ref struct {
	Name string
	Args []Node
}

// Literal is a string literal type.
type Literal struct{ Value string }

// Array is T[] (or an indexed access, which the extractor treats alike).
type Array struct{ Elem Node }

// Func is a function or constructor type.
type Func struct {
	Params []Param
	Result Node
}

// Param is one parameter of a function or method. A destructured
// parameter ({a, b}: T) is named "{}"; a rest parameter keeps its name.
type Param struct {
	Name     string
	Optional bool
	Type     Node
}

// Opaque is anything the reader does not model (tuples, mapped and
// conditional types, keyof, typeof, numbers, templates…).
type Opaque struct{ Text string }

func (*Object) node()       {}
func (*Union) node()        {}
func (*Intersection) node() {}
func (*Ref) node()          {}
func (*Literal) node()      {}
func (*Array) node()        {}
func (*Func) node()         {}
func (*Opaque) node()       {}

// Decl is a top-level declaration.
type Decl struct {
	Name string
	// Kind is "type", "interface", "const" or "function".
	Kind string
	// Exported is set for "export declare …"; names exported through a
	// namespace's export list are not tracked.
	Exported bool
	Type     Node // for a function, a *Func
}

// File is a parsed declaration file.
type File struct {
	Decls map[string]*Decl
	// Order lists the declarations' names in source order.
	Order []string
}

type tsParser struct {
	toks []tsToken
	i    int
	// depth bounds recursion, so hostile input cannot overflow the stack.
	depth int
}

const maxDepth = 200

// ParseDecls parses a declaration file. It fails only on input that is
// not a declaration file at all (no declarations found in a non-empty
// file); inner constructs it cannot read become *Opaque.
func ParseDecls(src string) (f *File, err error) {
	p := &tsParser{toks: lex(src)}
	f = &File{Decls: map[string]*Decl{}}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(depthPanic); !ok {
				panic(r)
			}
			f, err = nil, fmt.Errorf("parity: declarations nest deeper than %d levels", maxDepth)
		}
	}()
	for !p.eof() {
		start := p.i
		p.statement(f)
		if p.i == start {
			p.i++ // never loop in place
		}
	}
	return f, nil
}

type depthPanic struct{}

func (p *tsParser) eof() bool { return p.i >= len(p.toks) }

func (p *tsParser) peek() tsToken {
	if p.eof() {
		return tsToken{kind: tokEOF}
	}
	return p.toks[p.i]
}

func (p *tsParser) peekAt(k int) tsToken {
	if p.i+k >= len(p.toks) {
		return tsToken{kind: tokEOF}
	}
	return p.toks[p.i+k]
}

func (p *tsParser) is(text string) bool {
	t := p.peek()
	return (t.kind == tokPunct || t.kind == tokIdent) && t.text == text
}

func (p *tsParser) accept(text string) bool {
	if p.is(text) {
		p.i++
		return true
	}
	return false
}

func (p *tsParser) enter() {
	p.depth++
	if p.depth > maxDepth {
		panic(depthPanic{})
	}
}

func (p *tsParser) leave() { p.depth-- }

// statement reads one top-level statement, recording the declarations it
// understands and skipping the rest.
func (p *tsParser) statement(f *File) {
	exported := false
	for {
		if p.accept("export") {
			exported = true
			continue
		}
		if p.accept("declare") || p.accept("default") {
			continue
		}
		break
	}
	add := func(d *Decl) {
		d.Exported = exported
		if _, dup := f.Decls[d.Name]; !dup {
			f.Order = append(f.Order, d.Name)
		}
		f.Decls[d.Name] = d
	}
	switch {
	case p.is("type") && p.peekAt(1).kind == tokIdent:
		p.i++
		name := p.toks[p.i].text
		p.i++
		p.skipTypeParams()
		if !p.accept("=") {
			p.skipStatement()
			return
		}
		t := p.typeExpr()
		p.accept(";")
		add(&Decl{Name: name, Kind: "type", Type: t})
	case p.is("interface") && p.peekAt(1).kind == tokIdent:
		p.i++
		name := p.toks[p.i].text
		p.i++
		p.skipTypeParams()
		var ext []Node
		if p.accept("extends") {
			for {
				ext = append(ext, p.postfix())
				if !p.accept(",") {
					break
				}
			}
		}
		if !p.is("{") {
			p.skipStatement()
			return
		}
		o := p.object()
		o.Extends = ext
		add(&Decl{Name: name, Kind: "interface", Type: o})
	case (p.is("const") || p.is("let") || p.is("var")) && p.peekAt(1).kind == tokIdent:
		p.i++
		name := p.toks[p.i].text
		p.i++
		if !p.accept(":") {
			p.skipStatement()
			return
		}
		t := p.typeExpr()
		p.accept(";")
		add(&Decl{Name: name, Kind: "const", Type: t})
	case p.is("function") && p.peekAt(1).kind == tokIdent:
		p.i++
		name := p.toks[p.i].text
		p.i++
		p.skipTypeParams()
		var res Node = &Opaque{Text: "void"}
		var params []Param
		if p.is("(") {
			params = p.params()
			if p.accept(":") {
				res = p.returnType()
			}
		}
		p.accept(";")
		if _, dup := f.Decls[name]; !dup { // overloads: keep the first
			add(&Decl{Name: name, Kind: "function", Type: &Func{Params: params, Result: res}})
		}
	default:
		p.skipStatement()
	}
}

// skipStatement skips to the end of a statement this reader does not
// model: a ";" at bracket depth 0, or the "}" closing a block body
// (class, namespace, enum, export {…}).
func (p *tsParser) skipStatement() {
	depth := 0
	var prev tsToken
	blockAt := -1
	for !p.eof() {
		t := p.toks[p.i]
		p.i++
		if t.kind == tokPunct {
			switch t.text {
			case "(", "[", "<":
				depth++
			case "{":
				if depth == 0 && blockAt < 0 && (prev.kind == tokIdent || prev.kind == tokString || prev.text == ">" || prev.text == ")" || prev.kind == tokEOF) {
					blockAt = 1
				}
				depth++
			case ")", "]", ">":
				if depth > 0 {
					depth--
				}
			case "}":
				if depth > 0 {
					depth--
				}
				if depth == 0 && blockAt > 0 {
					return
				}
			case ";":
				if depth == 0 {
					return
				}
			}
		}
		prev = t
	}
}

// skipBalanced skips one bracketed group starting at the current tsToken.
func (p *tsParser) skipBalanced() string {
	start := p.i
	open := p.peek().text
	closeBy := map[string]string{"(": ")", "[": "]", "{": "}", "<": ">"}[open]
	if closeBy == "" {
		p.i++
		return p.text(start)
	}
	depth := 0
	for !p.eof() {
		t := p.toks[p.i]
		p.i++
		if t.kind != tokPunct {
			continue
		}
		switch t.text {
		case "(", "[", "{", "<":
			depth++
		case ")", "]", "}", ">":
			depth--
			if depth == 0 {
				return p.text(start)
			}
		}
	}
	return p.text(start)
}

func (p *tsParser) text(from int) string {
	var b strings.Builder
	for _, t := range p.toks[from:min(p.i, len(p.toks))] {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func (p *tsParser) skipTypeParams() {
	if p.is("<") {
		p.skipBalanced()
	}
}

// typeExpr := conditional | union.
func (p *tsParser) typeExpr() Node {
	p.enter()
	defer p.leave()
	t := p.union()
	if p.is("extends") { // conditional type: T extends U ? A : B
		start := p.i
		p.i++
		p.union()
		if p.accept("?") {
			a := p.typeExpr()
			if p.accept(":") {
				b := p.typeExpr()
				return &Union{Types: []Node{a, b}}
			}
		}
		return &Opaque{Text: p.text(start)}
	}
	return t
}

func (p *tsParser) union() Node {
	p.accept("|") // a leading bar
	var ts []Node
	for {
		ts = append(ts, p.intersection())
		if !p.accept("|") {
			break
		}
	}
	if len(ts) == 1 {
		return ts[0]
	}
	return &Union{Types: ts}
}

func (p *tsParser) intersection() Node {
	p.accept("&")
	var ts []Node
	for {
		ts = append(ts, p.postfix())
		if !p.accept("&") {
			break
		}
	}
	if len(ts) == 1 {
		return ts[0]
	}
	return &Intersection{Types: ts}
}

func (p *tsParser) postfix() Node {
	t := p.primary()
	for p.is("[") {
		if p.peekAt(1).text == "]" {
			p.i += 2
			t = &Array{Elem: t}
			continue
		}
		p.skipBalanced() // T[K]: an indexed access
		t = &Opaque{Text: "indexed access"}
	}
	return t
}

func (p *tsParser) primary() Node {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case t.kind == tokEOF:
		return &Opaque{Text: "EOF"}
	case t.kind == tokString:
		p.i++
		return &Literal{Value: t.text}
	case t.kind == tokNumber, t.kind == tokTemplate:
		p.i++
		return &Opaque{Text: t.text}
	case t.text == "-" && p.peekAt(1).kind == tokNumber:
		p.i += 2
		return &Opaque{Text: "-" + p.toks[p.i-1].text}
	case t.text == "{":
		if p.isMappedType() {
			return &Opaque{Text: p.skipBalanced()}
		}
		return p.object()
	case t.text == "[":
		return &Opaque{Text: p.skipBalanced()} // a tuple
	case t.text == "(":
		if p.isFuncType() {
			params := p.params()
			p.accept("=>")
			return &Func{Params: params, Result: p.returnType()}
		}
		p.i++
		in := p.typeExpr()
		p.accept(")")
		return in
	case t.text == "<": // a generic function type
		p.skipBalanced()
		return p.primary()
	case t.text == "new" || t.text == "abstract" && p.peekAt(1).text == "new":
		p.accept("abstract")
		p.i++
		p.skipTypeParams()
		if p.is("(") {
			p.skipBalanced()
		}
		p.accept("=>")
		return &Func{Result: p.returnType()}
	case t.text == "keyof" || t.text == "readonly" || t.text == "unique" || t.text == "infer":
		p.i++
		inner := p.postfix()
		if t.text == "readonly" {
			return inner
		}
		return &Opaque{Text: t.text}
	case t.text == "typeof":
		p.i++
		start := p.i
		p.qualifiedName()
		return &Opaque{Text: "typeof " + p.text(start)}
	case t.kind == tokIdent:
		name := p.qualifiedName()
		r := &Ref{Name: name}
		if p.is("<") {
			p.i++
			for !p.eof() && !p.is(">") {
				before := p.i
				r.Args = append(r.Args, p.typeExpr())
				if !p.accept(",") && p.i == before {
					p.i++
				}
			}
			p.accept(">")
		}
		if p.is("is") { // a type predicate: x is T
			p.i++
			p.typeExpr()
			return &Opaque{Text: "predicate"}
		}
		return r
	}
	// Something this reader does not know: one tsToken, opaque.
	p.i++
	return &Opaque{Text: t.text}
}

func (p *tsParser) returnType() Node {
	if p.is("asserts") {
		p.i++
		start := p.i
		p.qualifiedName()
		if p.accept("is") {
			p.typeExpr()
		}
		return &Opaque{Text: "asserts " + p.text(start)}
	}
	return p.typeExpr()
}

func (p *tsParser) qualifiedName() string {
	var parts []string
	for {
		t := p.peek()
		if t.kind != tokIdent {
			break
		}
		parts = append(parts, t.text)
		p.i++
		if !(p.is(".") && p.peekAt(1).kind == tokIdent) {
			break
		}
		p.i++
	}
	return strings.Join(parts, ".")
}

// params reads a parameter list, "(" to ")": name, optional mark and
// type of each. A parameter it cannot read is skipped to the next comma
// at its depth, so one odd parameter costs only itself.
func (p *tsParser) params() []Param {
	p.enter()
	defer p.leave()
	var out []Param
	if !p.accept("(") {
		return nil
	}
	for !p.eof() && !p.is(")") {
		start := p.i
		p.accept("...")
		for p.is("readonly") || p.is("public") || p.is("private") || p.is("protected") {
			if k := p.peekAt(1); k.kind == tokIdent || k.text == "{" || k.text == "[" {
				p.i++
				continue
			}
			break
		}
		var pm Param
		switch t := p.peek(); {
		case t.kind == tokIdent:
			pm.Name = t.text
			p.i++
		case t.text == "{" || t.text == "[":
			pm.Name = "{}"
			p.skipBalanced()
		}
		if pm.Name != "" {
			pm.Optional = p.accept("?")
			if p.accept(":") {
				pm.Type = p.typeExpr()
			} else {
				pm.Type = &Opaque{Text: "any"}
			}
			if pm.Name != "this" {
				out = append(out, pm)
			}
		}
		// To the next parameter: skip what is left of this one.
		for !p.eof() && !p.is(",") && !p.is(")") {
			if p.is("(") || p.is("[") || p.is("{") || p.is("<") {
				p.skipBalanced()
				continue
			}
			p.i++
		}
		p.accept(",")
		if p.i == start {
			p.i++
		}
	}
	p.accept(")")
	return out
}

// isFuncType reports whether the "(" at the cursor opens a parameter
// list: its matching ")" is followed by "=>".
func (p *tsParser) isFuncType() bool {
	save := p.i
	p.skipBalanced()
	ok := p.is("=>")
	p.i = save
	return ok
}

// isMappedType reports whether the "{" at the cursor opens a mapped type,
// { [K in T]: U } (possibly with readonly or +/- modifiers).
func (p *tsParser) isMappedType() bool {
	k := 1
	for {
		t := p.peekAt(k).text
		if t == "readonly" || t == "+" || t == "-" {
			k++
			continue
		}
		break
	}
	return p.peekAt(k).text == "[" && p.peekAt(k+1).kind == tokIdent && p.peekAt(k+2).text == "in"
}

// object reads { members }.
func (p *tsParser) object() *Object {
	p.enter()
	defer p.leave()
	o := &Object{}
	p.accept("{")
	for !p.eof() && !p.is("}") {
		start := p.i
		if f, ok := p.member(); ok {
			o.Fields = append(o.Fields, f)
		}
		for p.accept(";") || p.accept(",") {
		}
		if p.i == start {
			p.i++ // a tsToken no member starts with: skip it
		}
	}
	p.accept("}")
	return o
}

// member reads one object member; ok is false for index, call and
// construct signatures, which have no name.
func (p *tsParser) member() (Field, bool) {
	// Modifiers, unless they are the member's own name ("readonly: x").
	for (p.is("readonly") || p.is("get") || p.is("set") || p.is("static") || p.is("public") || p.is("private") || p.is("protected")) &&
		(p.peekAt(1).kind == tokIdent || p.peekAt(1).kind == tokString || p.peekAt(1).text == "[") {
		p.i++
	}
	t := p.peek()
	switch {
	case t.text == "[":
		p.skipBalanced() // [key: string]: T, or a computed name
		p.accept("?")
		if p.accept(":") {
			p.typeExpr()
		} else if p.is("(") {
			p.skipBalanced()
			if p.accept(":") {
				p.returnType()
			}
		}
		return Field{}, false
	case t.text == "(" || t.text == "<" || t.text == "new":
		p.accept("new")
		p.skipTypeParams()
		if p.is("(") {
			p.skipBalanced()
		}
		if p.accept(":") {
			p.returnType()
		}
		return Field{}, false
	case t.kind == tokIdent || t.kind == tokString || t.kind == tokNumber:
		p.i++
		f := Field{Name: t.text}
		if p.accept("?") {
			f.Optional = true
		}
		switch {
		case p.accept(":"):
			f.Type = p.typeExpr()
		case p.is("(") || p.is("<"):
			p.skipTypeParams()
			var params []Param
			if p.is("(") {
				params = p.params()
			}
			var res Node = &Opaque{Text: "void"}
			if p.accept(":") {
				res = p.returnType()
			}
			f.Type = &Func{Params: params, Result: res}
		default:
			f.Type = &Opaque{Text: "any"}
		}
		return f, true
	}
	return Field{}, false
}
