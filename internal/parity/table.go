package parity

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Status is how Tether stands on one name.
type Status string

// Statuses a row may have.
const (
	// Covered: the Tether names in the row do what the name does.
	Covered Status = "covered"
	// Declined: Tether will not offer it, for the reason in the note
	// (a Node-only option, a browser-only feature, …).
	Declined Status = "declined"
	// Gap: not offered yet; the note says what is missing. Tether names,
	// if any, are what covers part of it.
	Gap Status = "gap"
)

// Row is one line of the parity table.
type Row struct {
	Section string
	Name    string   // the TypeScript name, as Extract lists it
	Status  Status   // covered, declined or gap
	Tether  []string // Go names: "Options.Model", "Session.SetModel", "host.Session"
	Note    string
	Line    int // in the table file
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// ReadTable reads the parity table: under each "## <section>" heading, a
// Markdown table whose columns are the TypeScript name, the status, the
// Tether names (each in backticks) and a note. Other lines are prose and
// ignored.
func ReadTable(r io.Reader) ([]Row, error) {
	var rows []Row
	section := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if h, ok := strings.CutPrefix(text, "## "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		if !strings.HasPrefix(text, "|") || section == "" {
			continue
		}
		cells := splitRow(text)
		if len(cells) != 4 {
			return nil, fmt.Errorf("parity table line %d: %d columns, want 4 (name, status, Tether, note)", line, len(cells))
		}
		if cells[0] == "TypeScript" || strings.Trim(cells[0], "-: ") == "" {
			continue // the header and its separator
		}
		m := codeSpan.FindStringSubmatch(cells[0])
		if m == nil {
			return nil, fmt.Errorf("parity table line %d: the name %q is not in backticks", line, cells[0])
		}
		row := Row{Section: section, Name: m[1], Status: Status(cells[1]), Note: cells[3], Line: line}
		for _, t := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
			row.Tether = append(row.Tether, t[1])
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}

// splitRow splits "| a | b | c |" into trimmed cells; "\|" is a literal
// bar inside a cell.
func splitRow(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "|")
	s = strings.TrimSuffix(s, "|")
	var cells []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			b.WriteByte('|')
			i++
		case s[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// GoNames is the set of exported names of Go packages, as a parity table
// writes them: "Name" for a package-level identifier, "Type.Member" for a
// field (promoted ones included) or method, with "pkg." in front for a
// package other than the default one.
type GoNames map[string]bool

// ReadGoNames collects the exported names of the package in dir (test
// files excluded), prefixed with prefix ("" for the default package,
// "host." for another).
func ReadGoNames(dir, prefix string, into GoNames) error {
	files, err := parseDir(dir)
	if err != nil {
		return err
	}
	fields := map[string][]string{}   // type → its own exported fields and methods
	embedded := map[string][]string{} // type → embedded type names
	var types []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil || len(d.Recv.List) == 0 {
					into[prefix+d.Name.Name] = true
					continue
				}
				if r := recvName(d.Recv.List[0].Type); r != "" {
					fields[r] = append(fields[r], d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						name := s.Name.Name
						types = append(types, name)
						into[prefix+name] = true
						switch t := s.Type.(type) {
						case *ast.StructType:
							for _, f := range t.Fields.List {
								if len(f.Names) == 0 {
									if e := recvName(f.Type); e != "" {
										embedded[name] = append(embedded[name], e)
										if ast.IsExported(e) {
											fields[name] = append(fields[name], e)
										}
									}
									continue
								}
								for _, n := range f.Names {
									if n.IsExported() {
										fields[name] = append(fields[name], n.Name)
									}
								}
							}
						case *ast.InterfaceType:
							for _, m := range t.Methods.List {
								for _, n := range m.Names {
									if n.IsExported() {
										fields[name] = append(fields[name], n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								into[prefix+n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	// Members, with those promoted from embedded types (to a bound: a
	// cycle is a compile error, but this must not hang on one).
	var members func(t string, depth int) []string
	members = func(t string, depth int) []string {
		out := slices.Clone(fields[t])
		if depth < 10 {
			for _, e := range embedded[t] {
				out = append(out, members(e, depth+1)...)
			}
		}
		return out
	}
	for _, t := range types {
		for _, m := range members(t, 0) {
			into[prefix+t+"."+m] = true
		}
	}
	return nil
}

// parseDir parses the Go files of the package in dir, test files
// excluded: what the readers below take the API from.
func parseDir(dir string) ([]*ast.File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// recvName is the type name of a receiver or embedded field: T, *T, T[P].
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// Check compares the table with the declared names and the Go names. It
// returns the problems that must fail a test (names missing from the
// table, rows for names not declared, duplicates, bad statuses, Tether
// names that do not exist) and the gaps, which are reported only.
func Check(declared Names, rows []Row, goNames GoNames) (problems []string, gaps []Row) {
	seen := map[string]Row{}
	for _, r := range rows {
		key := r.Section + "\x00" + r.Name
		where := fmt.Sprintf("line %d (%s: %s)", r.Line, r.Section, r.Name)
		if prev, dup := seen[key]; dup {
			problems = append(problems, fmt.Sprintf("%s: listed again (first on line %d)", where, prev.Line))
			continue
		}
		seen[key] = r
		if !slices.Contains(Sections, r.Section) {
			problems = append(problems, fmt.Sprintf("%s: unknown section %q", where, r.Section))
			continue
		}
		if declared != nil && nameSection(r.Section) && !slices.Contains(declared[r.Section], r.Name) {
			problems = append(problems, fmt.Sprintf("%s: the SDK declares no such name (remove the row)", where))
		}
		switch r.Status {
		case Covered:
			if len(r.Tether) == 0 {
				problems = append(problems, fmt.Sprintf("%s: covered by nothing: name the Tether API in backticks", where))
			}
		case Declined, Gap:
			if strings.TrimSpace(r.Note) == "" {
				problems = append(problems, fmt.Sprintf("%s: %s without a note saying why", where, r.Status))
			}
			if r.Status == Gap {
				gaps = append(gaps, r)
			}
		default:
			problems = append(problems, fmt.Sprintf("%s: status %q is not covered, declined or gap", where, r.Status))
		}
		for _, t := range r.Tether {
			if !goNames[t] {
				problems = append(problems, fmt.Sprintf("%s: Tether name %s does not exist", where, t))
			}
		}
	}
	for _, s := range Sections {
		if !nameSection(s) {
			continue // CheckShapes's
		}
		for _, n := range declared[s] {
			if _, ok := seen[s+"\x00"+n]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is not in the table; add a row: | `%s` | covered/declined/gap | `Tether.Name` | note |", s, n, n))
			}
		}
	}
	return problems, gaps
}

// SDKDir is where scripts/install-sdk.sh puts a version of the SDK
// package: $TETHER_SDK_PATH if set (the package folder itself), else
// ${TETHER_SDK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether/sdk}/<v>/node_modules/@anthropic-ai/claude-agent-sdk.
func SDKDir(version string) string {
	if p := os.Getenv("TETHER_SDK_PATH"); p != "" {
		return p
	}
	cache := os.Getenv("TETHER_SDK_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "tether", "sdk")
	}
	return filepath.Join(cache, version, "node_modules", "@anthropic-ai", "claude-agent-sdk")
}
