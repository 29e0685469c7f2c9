// Command releasecheck proves a release of this repository's modules before
// it is tagged: it makes, from the committed tree, the module proxy the
// go command would read (a folder that GOPROXY=file://… serves, each zip
// made by golang.org/x/mod/zip, whose checks of names and sizes are the
// public proxy's); then, in a module of its own outside the workspace, it
// gets each module at the version and builds and runs a small program with
// it, the core's being the README's first example, verbatim; it counts
// what each consumer's module graph and go.sum hold; and it runs gorelease
// on each module against the previous release.
//
//	releasecheck -version v0.1.0 -base none -out dist/release . natsbridge topicotel topicvet
//
// The folders are those of the modules to release, from the repository's
// root, the core first. Everything it writes is under -out.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to release, such as v0.1.0")
	base := flag.String("base", "none", "the previous release, for gorelease; none for the first")
	out := flag.String("out", "dist/release", "the folder to write into, emptied first")
	repo := flag.String("repo", ".", "the repository's root")
	flag.Parse()
	if !semver.IsValid(*version) || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: releasecheck -version vX.Y.Z [-base vX.Y.Z|none] [-out dir] [-repo dir] module-folder...")
		os.Exit(2)
	}
	if err := run(*repo, *out, *version, *base, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

// A mod is a module to release.
type mod struct {
	dir  string // its folder, from the repository's root
	path string // its module path
}

func run(repo, out, version, base string, dirs []string) error {
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	proxy := filepath.Join(out, "proxy")
	commit, when, err := head(repo)
	if err != nil {
		return err
	}
	fmt.Printf("release %s of commit %s (%s)\n", version, commit[:12], when.Format(time.DateOnly))

	// The committed tree, outside the repository (whose uncommitted
	// changes gorelease would see).
	src, err := os.MkdirTemp("", "releasecheck-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := export(repo, src); err != nil {
		return err
	}
	core, err := publish(src, proxy, dirs[0], version, when)
	if err != nil {
		return fmt.Errorf("%s: %w", dirs[0], err)
	}
	// The consumers and their module cache, outside the repository.
	work, err := os.MkdirTemp("", "releasecheck-consumers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work) // -modcacherw: the cache's files can be removed
	env, err := consumerEnv(work, proxy, core.path)
	if err != nil {
		return err
	}
	mods := []mod{core}
	for _, dir := range dirs[1:] {
		// As the release does: the core tagged first, each module then
		// records the core's sum in its go.sum, and is tagged.
		if err := requiresCore(src, dir, core.path, version); err != nil {
			return err
		}
		before, _ := os.ReadFile(filepath.Join(src, dir, "go.sum"))
		if _, err := goIn(filepath.Join(src, dir), env, "mod", "tidy"); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		after, _ := os.ReadFile(filepath.Join(src, dir, "go.sum"))
		if added := bytes.Count(after, []byte("\n")) - bytes.Count(before, []byte("\n")); added != 0 {
			fmt.Printf("  %s/go.sum: %+d lines (go mod tidy, with the core released: commit them before tagging %s)\n", dir, added, dir)
		}
		m, err := publish(src, proxy, dir, version, when)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		mods = append(mods, m)
	}
	programs, err := programsOf(src, mods)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := consume(work, env, m, version, programs[m.path]); err != nil {
			return fmt.Errorf("a consumer of %s: %w", m.path, err)
		}
	}
	if err := apiCheck(repo, src, env, mods, version, base); err != nil {
		return err
	}
	fmt.Println("release check passed")
	return nil
}

// head returns the commit of HEAD and its time.
func head(repo string) (string, time.Time, error) {
	out, err := git(repo, "log", "-1", "--format=%H %ct", "HEAD")
	if err != nil {
		return "", time.Time{}, err
	}
	hash, secs, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "", time.Time{}, err
	}
	return hash, time.Unix(s, 0).UTC(), nil
}

// export writes the committed tree of repo into dir.
func export(repo, dir string) error {
	archive := exec.Command("git", "-C", repo, "archive", "--format=tar", "HEAD")
	untar := exec.Command("tar", "-x", "-C", dir)
	var err error
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return err
	}
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return err
	}
	return untar.Wait()
}

// requiresCore fails unless the module in folder dir of src requires the
// core at version, if at all.
func requiresCore(src, dir, core, version string) error {
	gomod, err := os.ReadFile(filepath.Join(src, dir, "go.mod"))
	if err != nil {
		return err
	}
	f, err := modfile.ParseLax(dir+"/go.mod", gomod, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Require {
		if r.Mod.Path == core && r.Mod.Version != version {
			return fmt.Errorf("%s requires %s %s, not the version released (%s): require the release", dir, core, r.Mod.Version, version)
		}
	}
	return nil
}

// publish writes the module in folder dir of src into the proxy at
// version: its list, info, go.mod and zip.
func publish(src, proxy, dir, version string, when time.Time) (mod, error) {
	gomod, err := os.ReadFile(filepath.Join(src, dir, "go.mod"))
	if err != nil {
		return mod{}, err
	}
	p := modfile.ModulePath(gomod)
	if p == "" {
		return mod{}, fmt.Errorf("no module path in its go.mod")
	}
	esc, err := module.EscapePath(p)
	if err != nil {
		return mod{}, err
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return mod{}, err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return mod{}, err
		}
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		return mod{}, err
	}
	defer z.Close()
	if err := zip.CreateFromDir(z, module.Version{Path: p, Version: version}, filepath.Join(src, dir)); err != nil {
		return mod{}, err
	}
	st, err := z.Stat()
	if err != nil {
		return mod{}, err
	}
	fmt.Printf("  %s@%s: %s (%d bytes)\n", p, version, filepath.Join(at, version+".zip"), st.Size())
	return mod{dir: dir, path: p}, z.Close()
}

// consumerEnv is the environment of the go commands of the consumers: no
// workspace, the proxy just made first, then the module cache's downloads
// (so that the modules already fetched are not fetched again), then the
// public proxy; no checksum database for the modules released, which it
// does not know yet; a module cache of their own, in work, so that no
// module of an earlier check is taken for this one.
func consumerEnv(work, proxy, core string) ([]string, error) {
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, err
	}
	downloads := filepath.Join(strings.TrimSpace(string(cache)), "cache", "download")
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOWORK", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOPRIVATE", "GONOPROXY", "GOMODCACHE":
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(downloads)+",https://proxy.golang.org",
		"GONOSUMDB="+core,
		"GOMODCACHE="+filepath.Join(work, "modcache"),
	), nil
}

// programsOf returns the program that each module's consumer runs, with
// the output it must print: the core's is the first Go block of the README
// of the committed tree in src, verbatim, and its comment says what it
// prints.
func programsOf(src string, mods []mod) (map[string][2]string, error) {
	readme, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		return nil, fmt.Errorf("README.md has no Go block")
	}
	block := string(m[1])
	want := regexp.MustCompile(`// (\S+)\n?$`).FindStringSubmatch(strings.TrimSpace(block))
	if want == nil {
		return nil, fmt.Errorf("the README's first Go block does not end with a comment giving its output")
	}
	core := mods[0].path
	programs := map[string][2]string{
		core: {fmt.Sprintf("package main\n\nimport (\n\t\"fmt\"\n\n\t%q\n)\n\nfunc main() {\n%s}\n", core, block), want[1] + "\n"},
	}
	for _, m := range mods[1:] {
		switch {
		case strings.HasSuffix(m.path, "/natsbridge"):
			programs[m.path] = [2]string{fmt.Sprintf(`package main

import (
	"fmt"

	%q
)

type Order struct{ ID int }

func main() {
	var codec natsbridge.JSON[Order]
	data, err := codec.Marshal(Order{ID: 7})
	if err != nil {
		panic(err)
	}
	o, err := codec.Unmarshal(data)
	fmt.Println(natsbridge.DefaultSubject[Order](), o.ID, err)
}
`, m.path), "topic.main.Order 7 <nil>\n"}
		case strings.HasSuffix(m.path, "/topicotel"):
			programs[m.path] = [2]string{fmt.Sprintf(`package main

import (
	"fmt"

	%q
	%q
	"go.opentelemetry.io/otel/metric/noop"
)

func main() {
	var b topic.Broker
	reg, err := topicotel.Register(&b, noop.NewMeterProvider())
	if err != nil {
		panic(err)
	}
	fmt.Println("registered:", reg.Unregister() == nil)
}
`, core, m.path), "registered: true\n"}
		case strings.HasSuffix(m.path, "/topicvet"):
			programs[m.path] = [2]string{fmt.Sprintf(`package main

import (
	"fmt"

	%q
)

func main() {
	for _, a := range topicvet.Analyzers {
		fmt.Print(a.Name, " ")
	}
	fmt.Println()
}
`, m.path), "topiccancel topicoptions unreceived unpublished pointervalue \n"}
		default:
			return nil, fmt.Errorf("no program for %s: add one to releasecheck", m.path)
		}
	}
	return programs, nil
}

// consume makes a module in work that requires m at version and runs its
// program, and reports the module graph and go.sum it has.
func consume(work string, env []string, m mod, version string, program [2]string) error {
	dir := filepath.Join(work, "consumer-"+strings.ReplaceAll(m.dir, "/", "-"))
	if m.dir == "." {
		dir = filepath.Join(work, "consumer-core")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.27\n",
		"main.go": program[0],
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("\n$ go get %s@%s\n", m.path, version)
	if _, err := goIn(dir, env, "get", m.path+"@"+version); err != nil {
		return err
	}
	if _, err := goIn(dir, env, "mod", "tidy"); err != nil {
		return err
	}
	got, err := goIn(dir, env, "run", ".")
	if err != nil {
		return err
	}
	fmt.Printf("$ go run .\n%s", got)
	if string(got) != program[1] {
		return fmt.Errorf("the program printed %q, want %q", got, program[1])
	}
	graph, err := goIn(dir, env, "list", "-m", "all")
	if err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	fmt.Printf("module graph: %d modules; go.sum: %d lines\n", bytes.Count(graph, []byte("\n")), bytes.Count(sum, []byte("\n")))
	for _, path := range testOnly[m.dir] {
		for line := range strings.Lines(string(graph)) {
			if f := strings.Fields(line); len(f) > 0 && f[0] == path {
				return fmt.Errorf("a consumer of %s has %s in its module graph, which only tests need: move the tests that import it into a module of their own", m.path, path)
			}
		}
	}
	return nil
}

// testOnly are, by module folder, the modules that only tests need, and
// which therefore must not be in a consumer's module graph: the tests that
// import them are in nested modules of their own, which are not released.
var testOnly = map[string][]string{
	"natsbridge": {"github.com/nats-io/nats-server/v2"},
	"topicotel":  {"github.com/prometheus/client_golang", "go.opentelemetry.io/otel/exporters/prometheus"},
}

// apiCheck runs gorelease in each module's folder of src, against base,
// and fails if it reports an incompatible change or another error.
func apiCheck(repo, src string, env []string, mods []mod, version, base string) error {
	tool := exec.Command("go", "tool", "-n", "gorelease")
	tool.Dir, tool.Env = filepath.Join(repo, "tools"), append(os.Environ(), "GOWORK=off")
	gorelease, err := tool.Output()
	if err != nil {
		return fmt.Errorf("go tool -n gorelease (in tools/): %w", err)
	}
	for _, m := range mods {
		fmt.Printf("\n$ gorelease -base=%s -version=%s   (%s)\n", base, version, m.path)
		cmd := exec.Command(strings.TrimSpace(string(gorelease)), "-base="+base, "-version="+version)
		cmd.Dir = filepath.Join(src, m.dir)
		cmd.Env = env
		report, err := cmd.CombinedOutput()
		os.Stdout.Write(report)
		if err != nil {
			return fmt.Errorf("gorelease of %s: %w", m.path, err)
		}
	}
	return nil
}

// goIn runs the go command in dir with env, and returns its output.
func goIn(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func git(repo string, args ...string) ([]byte, error) {
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
