package claude

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// The decode plans make the general decoder fast on the lines a session
// reads most (token deltas, the stream's other events, assistant and user
// messages) without a decoder written by hand per shape. A plan is built
// once per Go type, by reflection, from the same struct tags the general
// decoder (go-json-experiment/json) reads: for each JSON member name, the
// field's offset and kind. Decoding a line is then one pass of the scanner
// over it, storing each value at its offset. A string without escapes is
// not copied: it shares the line's memory, which the message keeps anyway
// as its RawJSON (DecodeMessage's line must not be modified afterwards), so
// a token costs no allocation for its strings (the garbage collector's work
// per token is what a host pays most for besides the scan).
//
// A plan decodes only what it is sure the general decoder would decode the
// same way, and gives up on anything else: a member of a kind it does not
// model (a map, an interface other than content blocks, a type with its
// own unmarshal method), a duplicate member, a number that does not fit,
// invalid UTF-8 (the general decoder replaces it), a null where the
// general decoder's handling differs, malformed JSON. The line then goes
// to the general decoder, which also produces the typed errors and the
// unknown messages, so every rule of DecodeMessage holds whichever path
// took a line. FuzzDecode checks that the two agree on every line a plan
// takes.

// fieldKind is how a plan stores one member's value.
type fieldKind uint8

const (
	kUnsupported fieldKind = iota // present: give up
	kString
	kBool
	kInt
	kInt64
	kFloat64
	kRaw     // json.RawMessage: the value's bytes in the line
	kStrings // []string
	kStruct  // a struct value: its own plan
	kPtr     // a pointer: allocated, then its element decoded
	kBlocks  // []ContentBlock or blockList: typed by each block's "type"
)

// planField is one member of a plan.
type planField struct {
	name string
	// quoted is the member's name as the CLI writes it: `"name":`.
	quoted string
	// words and tail are the name's bytes, as is compares them: words
	// eight at a time from the start, tail the last eight (four each
	// for a name of four to seven bytes).
	words [3]uint64
	tail  uint64
	off   uintptr
	kind  fieldKind
	elem  *plan        // kStruct, and kPtr to a struct
	ekind fieldKind    // kPtr: the element's kind
	etyp  reflect.Type // kPtr: the element's type
}

// plan decodes a JSON object into one struct type.
type plan struct {
	fields []planField
	byName map[string]int
	// tab finds a member by nameHash: a field's index plus one, 0 for no
	// field, tabLinear where names collide (then a scan of fields).
	tab  [planTab]uint8
	mult uint32
	// next predicts the member that comes after field i (slot i+1; slot
	// 0 for an object's first member), as a field's index plus one, 0
	// for no guess. The CLI writes an object's members in the same order
	// line after line, so checking the predicted `"name":` where the
	// member starts spares finding the name's end, hashing it and
	// comparing it again (a third of a token delta's decoding). Learned
	// from the lines decoded and shared by every goroutine that decodes
	// the type: a wrong guess costs one comparison, then the lookup.
	next []atomic.Uint32
	// custom is a type that decodes itself: no plan can stand in for it.
	custom bool
}

var (
	plansMu sync.Mutex
	plans   sync.Map // reflect.Type → *plan
)

var (
	rawType       = reflect.TypeFor[json.RawMessage]()
	blocksType    = reflect.TypeFor[[]ContentBlock]()
	blockListType = reflect.TypeFor[blockList]()
	// apiMessageType has unmarshal methods, but they decode exactly its
	// fields (Content as a blockList), so a plan may decode it directly.
	apiMessageType = reflect.TypeFor[APIMessage]()
)

// planFor returns the plan of struct type t.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	// Plans are published once complete: a reader never sees one half
	// built.
	building := map[reflect.Type]*plan{}
	p := buildPlan(t, building)
	for t, bp := range building {
		plans.Store(t, bp)
	}
	return p
}

func buildPlan(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := building[t]; ok { // a type that contains itself
		return p
	}
	p := &plan{byName: map[string]int{}, custom: t != apiMessageType && hasMethods(t)}
	building[t] = p
	p.add(t, 0, building)
	p.index()
	return p
}

// add adds the fields of struct type t, at offset base, to p.
func (p *plan) add(t reflect.Type, base uintptr, building map[reflect.Type]*plan) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct {
			p.add(f.Type, base+f.Offset, building) // embedded (Meta): inlined
			continue
		}
		if f.Anonymous && !hasTag || strings.Contains(opts, "inline") || strings.Contains(opts, "unknown") {
			// Members that land in a field by other rules than its
			// name: only the general decoder knows them.
			p.custom = true
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		pf := planField{name: name, off: base + f.Offset}
		for o := range strings.SplitSeq(opts, ",") {
			if o != "" && o != "omitempty" && o != "omitzero" {
				pf.kind = kUnsupported // inline, string, format, case, …
				p.put(pf)
				goto next
			}
		}
		pf.kind, pf.elem = kindOf(f.Type, building)
		if pf.kind == kPtr {
			pf.etyp = f.Type.Elem()
			pf.ekind, pf.elem = kindOf(pf.etyp, building)
			if pf.ekind == kPtr || pf.ekind == kUnsupported {
				pf.kind = kUnsupported
			}
		}
		p.put(pf)
	next:
	}
}

// planTab is the size of a plan's table of names (a power of two);
// tabLinear marks a slot of colliding names.
const (
	planTab   = 128
	tabLinear = 0xff
)

// nameHash hashes a member name for plan.tab from its length and three of
// its bytes (no loop over the key), multiplied by the plan's mult, which
// index chooses so that the names of its struct do not collide.
func nameHash(key []byte, mult uint32) uint {
	n := len(key)
	if n == 0 {
		return 0
	}
	x := uint32(n) | uint32(key[0])<<8 | uint32(key[n-1])<<16 | uint32(key[n/2])<<24
	return uint((x * mult) >> (32 - 7)) // 7 bits: planTab
}

// index fills p.tab from p.fields, with the first multiplier of a few
// tried under which no two names share a slot, and makes p.next's slots.
func (p *plan) index() {
	p.next = make([]atomic.Uint32, len(p.fields)+1)
	best, bestLinear := uint32(0), -1
	for try := range uint32(64) {
		mult := 0x9E3779B1 + 2*try*0x10001
		p.fill(mult)
		linear := 0
		for _, t := range p.tab {
			if t == tabLinear {
				linear++
			}
		}
		if bestLinear < 0 || linear < bestLinear {
			best, bestLinear = mult, linear
		}
		if linear == 0 {
			return
		}
	}
	p.fill(best)
}

func (p *plan) fill(mult uint32) {
	p.mult = mult
	p.tab = [planTab]uint8{}
	if len(p.fields) >= tabLinear {
		for h := range p.tab {
			p.tab[h] = tabLinear
		}
		return
	}
	for i, f := range p.fields {
		h := nameHash([]byte(f.name), mult)
		switch {
		case f.name == "":
			p.tab[h] = tabLinear
		case p.tab[h] == 0:
			p.tab[h] = uint8(i + 1)
		default:
			p.tab[h] = tabLinear
		}
	}
}

// lookup returns the index of the field named key.
func (p *plan) lookup(key []byte) (int, bool) {
	switch t := p.tab[nameHash(key, p.mult)]; t {
	case 0:
		return 0, false
	case tabLinear:
		for i := range p.fields {
			if p.fields[i].is(key) {
				return i, true
			}
		}
		return 0, false
	default:
		i := int(t) - 1
		return i, p.fields[i].is(key)
	}
}

// is reports whether key is f's name, a word at a time.
func (f *planField) is(key []byte) bool {
	n := len(key)
	if n != len(f.name) {
		return false
	}
	switch {
	case n >= 8 && n <= 32:
		for off := 0; off+8 <= n && off < 24; off += 8 {
			if binary.LittleEndian.Uint64(key[off:]) != f.words[off/8] {
				return false
			}
		}
		return binary.LittleEndian.Uint64(key[n-8:]) == f.tail
	case n >= 4 && n < 8:
		return binary.LittleEndian.Uint32(key) == uint32(f.words[0]) &&
			binary.LittleEndian.Uint32(key[n-4:]) == uint32(f.tail)
	}
	return f.name == string(key)
}

// setWords fills f.words and f.tail from f.name.
func (f *planField) setWords() {
	name := []byte(f.name)
	n := len(name)
	switch {
	case n >= 8:
		for off := 0; off+8 <= n && off < 24; off += 8 {
			f.words[off/8] = binary.LittleEndian.Uint64(name[off:])
		}
		f.tail = binary.LittleEndian.Uint64(name[n-8:])
	case n >= 4:
		f.words[0] = uint64(binary.LittleEndian.Uint32(name))
		f.tail = uint64(binary.LittleEndian.Uint32(name[n-4:]))
	}
}

// put adds a field; a name already taken (which the general decoder
// resolves by Go's rules of embedding) makes both unsupported.
func (p *plan) put(f planField) {
	if i, ok := p.byName[f.name]; ok {
		p.fields[i].kind = kUnsupported
		return
	}
	p.byName[f.name] = len(p.fields)
	f.setWords()
	f.quoted = strconv.Quote(f.name) + ":"
	p.fields = append(p.fields, f)
}

var (
	unmarshalerV1 = reflect.TypeFor[json.Unmarshaler]()
)

// hasMethods reports a type that decodes itself.
func hasMethods(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	if pt.Implements(unmarshalerV1) {
		return true
	}
	_, ok := pt.MethodByName("UnmarshalJSONFrom")
	if !ok {
		_, ok = pt.MethodByName("UnmarshalText")
	}
	return ok
}

func kindOf(t reflect.Type, building map[reflect.Type]*plan) (fieldKind, *plan) {
	switch t {
	case rawType:
		return kRaw, nil
	case blocksType, blockListType:
		return kBlocks, nil
	case apiMessageType:
		return kStruct, buildPlan(t, building)
	}
	if hasMethods(t) {
		return kUnsupported, nil
	}
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[string]() {
			return kString, nil
		}
	case reflect.Bool:
		if t == reflect.TypeFor[bool]() {
			return kBool, nil
		}
	case reflect.Int:
		if t == reflect.TypeFor[int]() {
			return kInt, nil
		}
	case reflect.Int64:
		if t == reflect.TypeFor[int64]() {
			return kInt64, nil
		}
	case reflect.Float64:
		if t == reflect.TypeFor[float64]() {
			return kFloat64, nil
		}
	case reflect.Slice:
		if t == reflect.TypeFor[[]string]() {
			return kStrings, nil
		}
	case reflect.Struct:
		return kStruct, buildPlan(t, building)
	case reflect.Pointer:
		return kPtr, nil
	}
	return kUnsupported, nil
}

// planDecoder is the state of one decode: the scanner.
type planDecoder struct {
	s scanner
}

// decodePlanned decodes line into v, a pointer to a zero struct, by its
// plan; false means it gave up, v then holding partial values.
func decodePlanned(line []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return false
	}
	return decodeWith(planFor(rv.Elem().Type()), line, rv.UnsafePointer())
}

// decodeWith decodes line by plan p into the zero struct at ptr (of p's
// type); false means it gave up, the struct then holding partial values.
// Unlike decodePlanned, it lets a caller's struct stay on its stack.
func decodeWith(p *plan, line []byte, ptr unsafe.Pointer) bool {
	d := planDecoder{s: scanner{b: line}}
	if !d.object(p, ptr) {
		return false
	}
	d.s.ws()
	return d.s.i == len(line)
}

// decodeInto decodes line into v (a pointer to a new value) by its plan,
// or by the general decoder when the plan gives up.
func decodeInto(line []byte, v any) error {
	if decodePlanned(line, v) {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return unmarshal(line, v)
}

// str scans a string (or null) to be stored at dst.
func (d *planDecoder) str(dst *string) bool {
	if s := &d.s; (s.i >= len(s.b) || s.b[s.i] != '"') && s.null() {
		return true
	}
	v, ok := d.s.strValue()
	*dst = v
	return ok
}

// object decodes an object (or null) into the struct at base.
func (d *planDecoder) object(p *plan, base unsafe.Pointer) bool {
	s := &d.s
	if p.custom {
		return false
	}
	if s.null() {
		return true
	}
	if !s.consume('{') {
		return false
	}
	var seen uint64
	prev := 0 // p.next's slot for the member after the last known one
	for first := true; ; first = false {
		if s.i < len(s.b) && s.b[s.i] == '}' { // the end, as member would find it
			s.i++
			return true
		}
		i, hit := s.predicted(p, prev, first)
		if !hit {
			key, done, ok := s.member(first)
			if !ok {
				return false
			} else if done {
				return true
			}
			var known bool
			if i, known = p.lookup(key); !known {
				if !plainKey(key) || !s.skipValue(0) {
					return false
				}
				continue
			}
			p.learn(prev, i)
		}
		prev = i + 1
		if i >= 64 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		f := &p.fields[i]
		ptr := unsafe.Add(base, f.off)
		if f.kind == kString && s.i < len(s.b) && s.b[s.i] == '"' {
			// The commonest value, without value's dispatch.
			v, ok := s.strValue()
			if !ok {
				return false
			}
			*(*string)(ptr) = v
			continue
		}
		if !d.value(f, ptr) {
			return false
		}
	}
}

// predicted moves past the next member's name when it is the one p.next
// predicts after slot prev, written as the CLI writes it (`,"name":`, no
// white space), and returns the field's index.
func (s *scanner) predicted(p *plan, prev int, first bool) (int, bool) {
	g := int(p.next[prev].Load())
	if g == 0 {
		return 0, false
	}
	f := &p.fields[g-1]
	b, j := s.b, s.i
	if !first {
		if j >= len(b) || b[j] != ',' {
			return 0, false
		}
		j++
	}
	if len(b)-j < len(f.quoted) || string(b[j:j+len(f.quoted)]) != f.quoted {
		return 0, false
	}
	s.i = j + len(f.quoted)
	return g - 1, true
}

// learn makes field i the guess after slot prev. It writes only a guess
// that changes: a right guess missed for white space leaves the slot, and
// its cache line, alone for the goroutines decoding on other cores.
func (p *plan) learn(prev, i int) {
	if g := &p.next[prev]; g.Load() != uint32(i+1) {
		g.Store(uint32(i + 1))
	}
}

// value decodes the value of field f at ptr.
func (d *planDecoder) value(f *planField, ptr unsafe.Pointer) bool {
	if f.kind == kPtr {
		s := &d.s
		if s.null() {
			return true
		}
		s.ws()
		if s.i >= len(s.b) || (f.ekind == kStruct && s.b[s.i] != '{') {
			return false
		}
		np := reflect.New(f.etyp).UnsafePointer()
		if !d.valueOf(f.ekind, f.elem, np) {
			return false
		}
		*(*unsafe.Pointer)(ptr) = np
		return true
	}
	return d.valueOf(f.kind, f.elem, ptr)
}

// valueOf decodes one value of the given kind at ptr.
func (d *planDecoder) valueOf(kind fieldKind, elem *plan, ptr unsafe.Pointer) bool {
	s := &d.s
	switch kind {
	case kString:
		return d.str((*string)(ptr))
	case kBool:
		if s.null() {
			return true
		}
		v, ok := s.boolean()
		*(*bool)(ptr) = v
		return ok
	case kInt, kInt64:
		if s.null() {
			return true
		}
		n, ok := s.signedInt()
		if kind == kInt {
			*(*int)(ptr) = int(n)
		} else {
			*(*int64)(ptr) = n
		}
		return ok
	case kFloat64:
		if s.null() {
			return true
		}
		start := s.i
		if !s.skipNumber() {
			return false
		}
		f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
		*(*float64)(ptr) = f
		return err == nil
	case kRaw:
		raw, ok := s.rawValue()
		if !ok || string(raw) == "null" { // the general decoder keeps "null" or nil by context
			return false
		}
		*(*json.RawMessage)(ptr) = raw
		return true
	case kStrings:
		return d.strings((*[]string)(ptr))
	case kStruct:
		return d.object(elem, ptr)
	case kBlocks:
		return d.blocks((*[]ContentBlock)(ptr))
	}
	return false
}

func (d *planDecoder) strings(dst *[]string) bool {
	s := &d.s
	if s.null() {
		return true
	}
	if !s.consume('[') {
		return false
	}
	var out []string
	for first := true; ; first = false {
		if s.consume(']') {
			break
		}
		if !first && !s.consume(',') {
			return false
		}
		v, ok := s.strValue() // a null among strings too: the general decoder
		if !ok {
			return false
		}
		out = append(out, v)
	}
	if out == nil {
		out = []string{}
	}
	*dst = out
	return true
}

// blocks decodes a content list: an array of blocks, a plain string (one
// text block), or null.
func (d *planDecoder) blocks(dst *[]ContentBlock) bool {
	s := &d.s
	if s.null() {
		return true
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '"' {
		t := new(TextBlock)
		if !d.str(&t.Text) {
			return false
		}
		*dst = []ContentBlock{t}
		return true
	}
	if !s.consume('[') {
		return false
	}
	out := []ContentBlock{}
	for first := true; ; first = false {
		if s.consume(']') {
			break
		}
		if !first && !s.consume(',') {
			return false
		}
		b, ok := d.block()
		if !ok {
			return false
		}
		out = append(out, b)
	}
	*dst = out
	return true
}

// block decodes one content block, typed by its "type" member wherever it
// is (as decodeBlock types it); a block of a type Tether does not know is
// kept raw.
func (d *planDecoder) block() (ContentBlock, bool) {
	s := &d.s
	s.ws()
	start := s.i
	// As the CLI writes blocks, type first: no pass to find it.
	typ, ok := peekType(s.b[start:])
	if !ok {
		if !s.skipValue(0) {
			return nil, false
		}
		if typ, ok = memberType(s.b[start:s.i]); !ok {
			return nil, false
		}
		s.i = start
	}
	b := newBlock(typ)
	if b == nil {
		if !s.skipValue(0) {
			return nil, false
		}
		return &UnknownBlock{Type: typ, Raw: bytes.Clone(s.b[start:s.i])}, true
	}
	rv := reflect.ValueOf(b)
	return b, d.object(planFor(rv.Elem().Type()), rv.UnsafePointer())
}

// memberType returns the value of an object's "type" member, a plain
// string; ok is false when it is missing, repeated, or anything else.
func memberType(obj []byte) (string, bool) {
	if typ, ok := peekType(obj); ok {
		return typ, true
	}
	s := scanner{b: obj}
	if !s.consume('{') {
		return "", false
	}
	var typ []byte
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return "", false
		} else if done {
			break
		}
		if string(key) != "type" {
			if !s.skipValue(0) {
				return "", false
			}
			continue
		}
		if typ != nil {
			return "", false
		}
		if typ, ok = s.rawString(); !ok || bytes.IndexByte(typ, '\\') >= 0 {
			return "", false
		}
	}
	for _, c := range typ {
		if c < 0x20 || c >= 0x80 {
			return "", false
		}
	}
	if typ == nil {
		return "", false
	}
	return string(typ), true
}

// plainKey reports an unknown member's name that the general decoder
// reads as it is: rawString leaves keys unchecked, and one with an escape
// might name a field once unescaped, one with a control character or
// invalid UTF-8 is an error or is replaced.
func plainKey(key []byte) bool {
	var hi byte
	for _, c := range key {
		if c < 0x20 || c == '\\' {
			return false
		}
		hi |= c
	}
	return hi < 0x80 || utf8.Valid(key)
}

// signedInt decodes an integer of up to 18 digits, maybe negative.
func (s *scanner) signedInt() (int64, bool) {
	s.ws()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	n, ok := s.int64()
	if neg {
		n = -n
	}
	return n, ok
}
