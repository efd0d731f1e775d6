// Command sdkgen writes the Go types of package claude that the
// official TypeScript Agent SDK declares: the inputs of the built-in
// tools (claude/tools_input_gen.go, with DecodeToolInput's table) and
// their structured results (claude/tools_result_gen.go). It reads the
// SDK's sdk-tools.d.ts with internal/parity's declaration reader, the
// same the parity test checks the table with.
//
// Run it through go generate in package claude:
//
//	go generate ./claude
//
// after installing the SDK (scripts/install-sdk.sh VERSION); -version
// picks another installed SDK, and TETHER_SDK_PATH (as for the parity
// test) points at one outside the cache.
//
// What the declarations cannot say lives in the tables of
// mapping_inputs.go and mapping_results.go: the Go names Tether has
// always used, the tools' names, the documentation, and the Go types
// where the declaration is looser than what package claude has always
// decoded (package claude changes only compatibly). A field or a tool the
// tables do not know is generated with derived names and a note on
// standard error, so that a new SDK release regenerates rather than
// being retyped; the notes say what to add to the tables.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/internal/parity"
)

// SDKVersion is the SDK the committed files are generated from.
const SDKVersion = "0.3.337"

// outputs are the files written, relative to package claude.
const (
	inputsFile  = "tools_input_gen.go"
	resultsFile = "tools_result_gen.go"
	systemFile  = "system_gen.go"
	hooksFile   = "hook_input_gen.go"
)

func main() {
	version := flag.String("version", SDKVersion, "the installed SDK `version` to generate from")
	out := flag.String("o", ".", "the `directory` of package claude")
	flag.Parse()
	files, notes, err := generate(parity.SDKDir(*version), *version)
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "sdkgen:", n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(*out, name), src, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "sdkgen:", err)
			os.Exit(1)
		}
	}
}

// generate reads the SDK at dir and returns the generated files by name,
// and notes on what the mapping tables lack or no longer need.
func generate(dir, version string) (map[string][]byte, []string, error) {
	src, err := os.ReadFile(filepath.Join(dir, "sdk-tools.d.ts"))
	if err != nil {
		return nil, nil, err
	}
	sdkSrc, err := os.ReadFile(filepath.Join(dir, "sdk.d.ts"))
	if err != nil {
		return nil, nil, err
	}
	if v, err := packageVersion(dir); err == nil && v != version {
		return nil, nil, fmt.Errorf("%s holds SDK %s, not %s", dir, v, version)
	}
	decls, err := parity.ParseDecls(string(src))
	if err != nil {
		return nil, nil, err
	}
	sdkDecls, err := parity.ParseDecls(string(sdkSrc))
	if err != nil {
		return nil, nil, err
	}
	specs := map[string]typeSpec{}
	for _, m := range []map[string]typeSpec{inputSpecs, resultSpecs, systemSpecs, hookSpecs} {
		for k, v := range m {
			specs[k] = v
		}
	}
	g := newGenerator(decls, specs)
	files := map[string][]byte{}
	in, err := g.toolInputs()
	if err != nil {
		return nil, g.notes, err
	}
	if files[inputsFile], err = source(version, "sdk-tools.d.ts ToolInputSchemas", in); err != nil {
		return nil, g.notes, err
	}
	g.buf.Reset()
	res, err := g.toolResults()
	if err != nil {
		return nil, g.notes, err
	}
	if files[resultsFile], err = source(version, "sdk-tools.d.ts ToolOutputSchemas", res); err != nil {
		return nil, g.notes, err
	}
	if len(g.errs) > 0 {
		return nil, g.notes, errors.New(strings.Join(g.errs, "\n"))
	}
	sg := newGenerator(sdkDecls, specs)
	sg.meta = true
	sys, err := sg.systemMessages(decls)
	if err != nil {
		return nil, append(g.notes, sg.notes...), err
	}
	if files[systemFile], err = source(version, "sdk.d.ts system messages", sys); err != nil {
		return nil, g.notes, err
	}
	hg := newGenerator(sdkDecls, specs)
	hg.discriminant = "hook_event_name"
	hooks, err := hg.hookInputs()
	if err != nil {
		return nil, append(g.notes, hg.notes...), err
	}
	if files[hooksFile], err = source(version, "sdk.d.ts HookInput", hooks); err != nil {
		return nil, g.notes, err
	}
	for _, x := range []*generator{sg, hg} {
		g.notes = append(g.notes, x.notes...)
		g.errs = append(g.errs, x.errs...)
		for k := range x.used {
			g.used[k] = true
		}
	}
	if len(g.errs) > 0 {
		return nil, g.notes, errors.New(strings.Join(g.errs, "\n"))
	}
	for _, k := range g.unusedSpecs() {
		g.notef("%s: in the mapping but not declared; remove it, or keep its type by hand", k)
	}
	return files, g.notes, nil
}

// packageVersion reads the version of the npm package at dir.
func packageVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	_, rest, ok := bytes.Cut(b, []byte(`"version"`))
	if !ok {
		return "", errors.New("package.json has no version")
	}
	_, rest, _ = bytes.Cut(rest, []byte(`"`))
	v, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(v), nil
}

// toolInputs writes a struct per member of ToolInputSchemas, its
// ToolInput methods, and the table DecodeToolInput looks tools up in.
func (g *generator) toolInputs() ([]byte, error) {
	members, err := g.unionMembers("ToolInputSchemas")
	if err != nil {
		return nil, err
	}
	type tool struct{ name, goName string }
	var tools []tool
	var aliases []tool
	for _, ts := range members {
		if ts == "ToolOutputSchemas" {
			continue
		}
		sp := g.spec(ts)
		if sp.Skip != "" {
			continue
		}
		o, ok := g.object(ts)
		if !ok {
			g.notef("%s: not an object type; skipped (type it by hand and mark it Skip)", ts)
			continue
		}
		goName := sp.Go
		if goName == "" {
			goName = ts
		}
		name := sp.Tool
		if name == "" {
			name = strings.TrimSuffix(ts, "Input")
			if _, known := g.specs[ts]; !known {
				g.notef("%s: not in the mapping; generated as %s for the tool %q (check the name the CLI lists in system/init)", ts, goName, name)
			}
		}
		g.structType(ts, goName, o, fmt.Sprintf("%s is the input of the %s tool.", goName, name))
		tools = append(tools, tool{name, goName})
		for _, a := range sp.Aliases {
			aliases = append(aliases, tool{a, goName})
		}
	}
	for _, t := range tools {
		g.printf("// ToolName returns %q.\nfunc (*%s) ToolName() string { return %q }\n", t.name, t.goName, t.name)
		g.printf("func (*%s) isToolInput() {}\n\n", t.goName)
	}
	var rows [][2]string
	for _, t := range append(tools, aliases...) {
		rows = append(rows, [2]string{strconv.Quote(t.name), t.goName})
	}
	g.table("toolInputs maps the names of the tools, current and former, to their input types, for DecodeToolInput.",
		"toolInputs", "string", "ToolInput", rows)
	return g.buf.Bytes(), nil
}

// toolResults writes a type per member of ToolOutputSchemas the mapping
// does not leave to hand-written code: a struct for an object type, a
// slice for an array of objects.
func (g *generator) toolResults() ([]byte, error) {
	members, err := g.unionMembers("ToolOutputSchemas")
	if err != nil {
		return nil, err
	}
	for _, ts := range members {
		sp := g.spec(ts)
		if sp.Skip != "" {
			continue
		}
		goName := sp.Go
		if goName == "" {
			goName = strings.TrimSuffix(ts, "Output") + "Result"
			g.notef("%s: not in the mapping; generated as %s", ts, goName)
		}
		defaultDoc := fmt.Sprintf("%s is the structured result of the %s tool.", goName, strings.TrimSuffix(ts, "Output"))
		d := g.decls.Decls[ts]
		switch t := d.Type.(type) {
		case *parity.Object:
			g.structType(ts, goName, t, defaultDoc)
		case *parity.Array:
			o, ok := t.Elem.(*parity.Object)
			if !ok {
				g.notef("%s: an array of what Go cannot type; skipped (type it by hand and mark it Skip)", ts)
				continue
			}
			npath := ts + "[]"
			elem := g.specs[npath].Go
			if elem == "" {
				elem = goName + "Item"
			}
			if sp.Doc == "" {
				sp.Doc = defaultDoc
			}
			writeDoc(&g.buf, sp.Doc, "")
			g.printf("type %s []%s\n\n", goName, elem)
			g.structType(npath, elem, o, fmt.Sprintf("%s is an element of %s.", elem, goName))
		default:
			g.notef("%s: not an object type; skipped (type it by hand and mark it Skip)", ts)
		}
	}
	return g.buf.Bytes(), nil
}

// systemMessages writes a struct per system message subtype sdk.d.ts
// declares (the members of SDKMessage whose type is "system"), their
// Message methods, and the table decodeSystem looks subtypes up in.
func (g *generator) systemMessages(tools *parity.File) ([]byte, error) {
	sh, err := parity.ExtractShapes(g.decls, tools)
	if err != nil {
		return nil, err
	}
	type msg struct{ subtype, goName string }
	var table []msg
	var order []string // declarations, in the order of their first subtype
	subtypes := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(sh.MessageTypes)) {
		sub, ok := strings.CutPrefix(name, "system/")
		if !ok {
			continue
		}
		for _, ts := range sh.MessageTypes[name] {
			if subtypes[ts] == nil {
				order = append(order, ts)
			}
			subtypes[ts] = append(subtypes[ts], sub)
		}
	}
	var goNames []string
	for _, ts := range order {
		sp := g.spec(ts)
		if sp.Skip != "" {
			continue
		}
		o, ok := g.object(ts)
		if !ok {
			g.notef("%s: not an object type; skipped (type it by hand and mark it Skip)", ts)
			continue
		}
		goName := sp.Go
		if goName == "" {
			goName = strings.TrimPrefix(ts, "SDK")
			g.notef("%s: not in the mapping; generated as %s", ts, goName)
		}
		g.structType(ts, goName, o, fmt.Sprintf("%s (system/%s) is a system message.", goName, subtypes[ts][0]))
		goNames = append(goNames, goName)
		for _, sub := range append(subtypes[ts], sp.Aliases...) {
			table = append(table, msg{sub, goName})
		}
	}
	for _, n := range goNames {
		g.printf("func (*%s) isMessage() {}\n", n)
	}
	var rows [][2]string
	for _, m := range table {
		rows = append(rows, [2]string{strconv.Quote(m.subtype), m.goName})
	}
	g.printf("\n")
	g.table("systemMessages maps the system subtypes the SDK declares to their types, for decodeSystem.",
		"systemMessages", "string", "Message", rows)
	return g.buf.Bytes(), nil
}

// hookInputs writes a struct per member of HookInput (each event's own
// fields: HookInput holds BaseHookInput's), their HookEventInput methods,
// and the table decodeHookInput looks events up in. An event's constant,
// HookEvent<Name>, is hand-written (hook.go) with what it is for.
func (g *generator) hookInputs() ([]byte, error) {
	members, err := g.unionMembers("HookInput")
	if err != nil {
		return nil, err
	}
	type hook struct{ event, goName string }
	var hooks []hook
	for _, ts := range members {
		sp := g.spec(ts)
		if sp.Skip != "" {
			continue
		}
		d := g.decls.Decls[ts]
		if d == nil {
			return nil, fmt.Errorf("the declarations have no %s", ts)
		}
		// BaseHookInput & {hook_event_name: "X"; …}: the object parts.
		own := &parity.Object{Fields: ownFields(d.Type)}
		event := ""
		for _, f := range own.Fields {
			if l, ok := f.Type.(*parity.Literal); ok && f.Name == g.discriminant {
				event = l.Value
			}
		}
		if event == "" {
			g.notef("%s: no hook_event_name; skipped (type it by hand and mark it Skip)", ts)
			continue
		}
		goName := sp.Go
		if goName == "" {
			goName = ts
			g.notef("%s: not in the mapping; generated as %s (add the constant HookEvent%s to hook.go)", ts, goName, event)
		}
		g.structType(ts, goName, own, fmt.Sprintf("%s: the %s hook event fired.", goName, event))
		hooks = append(hooks, hook{event, goName})
	}
	for _, h := range hooks {
		g.printf("func (*%s) HookEvent() HookEvent { return HookEvent%s }\n", h.goName, h.event)
		g.printf("func (*%s) isHookEventInput() {}\n\n", h.goName)
	}
	var rows [][2]string
	for _, h := range hooks {
		rows = append(rows, [2]string{"HookEvent" + h.event, h.goName})
	}
	g.table("hookInputs makes the empty variant for each event the SDK declares.",
		"hookInputs", "HookEvent", "HookEventInput", rows)
	return g.buf.Bytes(), nil
}
