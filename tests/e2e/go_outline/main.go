// Command go_outline prints the top-level declarations of one Go file as a JSON array, using Go's
// own parser (go/parser). The end-to-end tests compare filepuff's file_read outline against it.
//
// Each entry: name, kind (function, method, struct, interface, type, constant, variable),
// container (a method's receiver type, as written), start_line and end_line (1-based, inclusive).
// A function or method starts at `func` (its doc comment is not part of it); a type, constant or
// variable starts at its spec (the name), one entry per declared name.
package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
)

type symbol struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Container string `json:"container,omitempty"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

func main() {
	src, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, os.Args[1], src, parser.SkipObjectResolution)
	if err != nil {
		panic(err)
	}
	first := func(n ast.Node) int { return fset.Position(n.Pos()).Line }
	// End() is just past the node: its last line is the line of the byte before.
	last := func(n ast.Node) int { return fset.Position(n.End() - 1).Line }
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	out := []symbol{}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			s := symbol{Name: d.Name.Name, Kind: "function", StartLine: first(d), EndLine: last(d)}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				s.Kind = "method"
				s.Container = text(d.Recv.List[0].Type)
			}
			out = append(out, s)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					kind := "type"
					switch sp.Type.(type) {
					case *ast.StructType:
						kind = "struct"
					case *ast.InterfaceType:
						kind = "interface"
					}
					out = append(out, symbol{Name: sp.Name.Name, Kind: kind, StartLine: first(sp), EndLine: last(sp)})
				case *ast.ValueSpec:
					kind := "variable"
					if d.Tok == token.CONST {
						kind = "constant"
					}
					for _, name := range sp.Names {
						out = append(out, symbol{Name: name.Name, Kind: kind, StartLine: first(sp), EndLine: last(sp)})
					}
				}
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
