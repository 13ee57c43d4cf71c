// Command gendocs writes docs/configuration.md from Cairn's property registry.
//
//	go run ./internal/config/cmd/gendocs          # rewrite the file
//	go run ./internal/config/cmd/gendocs -check   # exit 1 if the file is out of date
//
// The file is found from the module root (the nearest directory above the working
// directory holding go.mod) unless -out names it.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairn-io/cairn/internal/config"
)

func main() {
	check := flag.Bool("check", false, "do not write; exit 1 if the file differs from the registry")
	out := flag.String("out", "", "file to write (default: <module root>/"+config.DocPath+")")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(path string, check bool) error {
	if path == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		path = filepath.Join(root, filepath.FromSlash(config.DocPath))
	}
	want := []byte(config.Markdown())
	if check {
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s is out of date; run: go run ./internal/config/cmd/gendocs", path)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, want, 0o644)
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; pass -out")
		}
		dir = parent
	}
}
