package serve

import (
	"embed"
	"io/fs"
)

// The web UI (serve/ui): static files, served as they are.
//
//go:embed ui
var uiFiles embed.FS

func embeddedUI() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
