package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entry is one file of a root filesystem as the image keeps it.
type entry struct {
	Type   string // dir, file, symlink
	Mode   fs.FileMode
	Link   string // a symlink's target
	SHA256 string // a file's content
}

// The image make image builds is the Dockerfile's final stage: its configuration is what that stage says,
// and its files are exactly what hack/rootfs.sh makes, the script the Dockerfile's build stage runs for
// registries. (The build stage itself needs golang:1.26-bookworm from a registry: it is not built here.)
func TestTheImageIsTheDockerfilesFinalStage(t *testing.T) {
	need(t)
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	stages := stagesOf(t, string(dockerfile))
	require.Len(t, stages, 2, "a build stage and the final stage")
	assert.Contains(t, strings.Join(stages[0], "\n"), "./hack/rootfs.sh /rootfs /out/o2ims-operator",
		"the registry build makes the root filesystem with the same script")
	final := stages[1]
	require.Equal(t, "FROM scratch", final[0])

	// What the final stage says, read here independently of hack/image.sh.
	type config struct {
		User         string
		ExposedPorts map[string]struct{}
		Env          []string
		Entrypoint   []string
		Cmd          []string
		WorkingDir   string
		Labels       map[string]string
	}
	want := config{ExposedPorts: map[string]struct{}{}, Labels: map[string]string{}}
	copies := 0
	for _, line := range final[1:] {
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "ARG":
		case "COPY":
			assert.Equal(t, "--from=build /rootfs/ /", rest, "the final stage copies the root filesystem only")
			copies++
		case "USER":
			want.User = rest
		case "WORKDIR":
			want.WorkingDir = rest
		case "ENV":
			want.Env = append(want.Env, rest)
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				want.ExposedPorts[p+"/tcp"] = struct{}{}
			}
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(rest), &want.Entrypoint), line)
		case "CMD":
			require.NoError(t, json.Unmarshal([]byte(rest), &want.Cmd), line)
		case "LABEL":
			for _, kv := range labelPair.FindAllStringSubmatch(rest, -1) {
				want.Labels[kv[1]] = strings.ReplaceAll(strings.Trim(kv[2], `"`), "${VERSION}", imageVersion)
			}
		default:
			t.Fatalf("the final stage has %q, which this test does not compare", line)
		}
	}
	assert.Equal(t, 1, copies)

	out, stderr, err := podman("image", "inspect", "--format", "{{json .Config}}", image)
	require.NoError(t, err, stderr)
	var got config
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	delete(got.Labels, "io.buildah.version") // podman's own
	// The revision is the commit built: git's HEAD, "-dirty" when the checkout has changes.
	revision := got.Labels["org.opencontainers.image.revision"]
	if head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		assert.Contains(t, []string{strings.TrimSpace(string(head)), strings.TrimSpace(string(head)) + "-dirty"}, revision)
	}
	for k, v := range want.Labels {
		want.Labels[k] = strings.ReplaceAll(v, "${REVISION}", revision)
	}
	assert.Equal(t, want, got, "the image's configuration is the Dockerfile's final stage")

	// The OCI annotations registries and scanners read (opencontainers/image-spec annotations.md), each set.
	for _, k := range []string{"source", "revision", "licenses", "description", "version", "title"} {
		assert.NotEmpty(t, got.Labels["org.opencontainers.image."+k], k)
	}
	assert.Equal(t, imageVersion, got.Labels["org.opencontainers.image.version"], "the version make image is given")
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	require.NoError(t, err)
	require.Contains(t, string(license), "Apache License\n                           Version 2.0")
	assert.Equal(t, "Apache-2.0", got.Labels["org.opencontainers.image.licenses"], "LICENSE's SPDX id")

	// What the issue asks of it, whatever the Dockerfile says.
	assert.Equal(t, "65535:65535", got.User)
	assert.Equal(t, []string{"/usr/local/bin/o2ims-operator"}, got.Entrypoint)
	assert.Equal(t, []string{"--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"}, got.Cmd, "the Python image's CMD, as arguments")
	assert.Contains(t, got.Env, "PATH=/usr/local/bin:/usr/bin:/bin", "kopf is found on PATH")

	// The image's files: exactly what hack/rootfs.sh makes, all owned by root and writable by nobody else.
	files, binary := exported(t)
	want2 := rootfs(t, binary)
	assert.Equal(t, want2, files, "the image's files are hack/rootfs.sh's")
	assert.Equal(t, []string{"etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt",
		"usr", "usr/local", "usr/local/bin", "usr/local/bin/kopf", "usr/local/bin/o2ims-operator"}, sortedKeys(files))
	assert.Equal(t, entry{Type: "symlink", Mode: 0o777, Link: "o2ims-operator"}, files["usr/local/bin/kopf"])
	assert.Equal(t, fs.FileMode(0o755), files["usr/local/bin/o2ims-operator"].Mode)
	debianCA, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	require.NoError(t, err, "Debian's ca-certificates")
	assert.Equal(t, sha(debianCA), files["etc/ssl/certs/ca-certificates.crt"].SHA256, "Debian's CA bundle")
	passwd, group := readFile(t, filepath.Dir(binary), "etc/passwd"), readFile(t, filepath.Dir(binary), "etc/group")
	assert.Contains(t, strings.Split(passwd, "\n"), "o2ims:x:65535:65535:o2ims-operator:/nonexistent:/usr/sbin/nologin")
	assert.Contains(t, strings.Split(group, "\n"), "o2ims:x:65535:")

	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	for _, p := range []string{".git", "bin/"} {
		assert.Contains(t, strings.Split(string(ignore), "\n"), p, ".dockerignore keeps %s out of the context", p)
	}
}

// stagesOf splits a Dockerfile into its stages' instructions (comments and blank lines dropped).
// labelPair is one key=value of a LABEL instruction, the value possibly quoted with spaces.
var labelPair = regexp.MustCompile(`(\S+?)=("[^"]*"|\S+)`)

func stagesOf(t *testing.T, dockerfile string) [][]string {
	var stages [][]string
	for _, line := range strings.Split(dockerfile, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		require.False(t, strings.HasSuffix(line, `\`), "continued lines are not read here: %s", line)
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, nil)
		}
		require.NotEmpty(t, stages, "an instruction before the first FROM: %s", line)
		stages[len(stages)-1] = append(stages[len(stages)-1], line)
	}
	return stages
}

// exported lists the image's files as `podman export` of a container never started gives them (a started
// one gains the runtime's mount points), and returns the binary's path, extracted.
func exported(t *testing.T) (map[string]entry, string) {
	id, stderr, err := podman("create", image)
	require.NoError(t, err, stderr)
	id = strings.TrimSpace(id)
	defer func() { _, _, _ = podman("rm", "-f", id) }()
	cmd := exec.Command("podman", "export", id)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), errOut.String())

	files := map[string]entry{}
	binary := filepath.Join(t.TempDir(), "o2ims-operator")
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		name := strings.Trim(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "" {
			continue
		}
		assert.Equal(t, 0, h.Uid, "%s owned by root", name)
		assert.Equal(t, 0, h.Gid, "%s owned by root's group", name)
		e := entry{Mode: fs.FileMode(h.Mode) & fs.ModePerm}
		switch h.Typeflag {
		case tar.TypeDir:
			e.Type = "dir"
		case tar.TypeSymlink:
			e.Type, e.Link = "symlink", h.Linkname
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			e.Type, e.SHA256 = "file", sha(b)
			switch name {
			case "usr/local/bin/o2ims-operator":
				require.NoError(t, os.WriteFile(binary, b, 0o755))
			case "etc/passwd", "etc/group":
				require.NoError(t, os.MkdirAll(filepath.Join(filepath.Dir(binary), "etc"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(binary), name), b, 0o644))
			}
		default:
			t.Fatalf("%s: unexpected tar entry type %c", name, h.Typeflag)
		}
		if e.Type != "symlink" {
			assert.Zero(t, e.Mode&0o022, "%s is writable by others than root: %v", name, e.Mode)
		}
		files[name] = e
	}
	return files, binary
}

// rootfs lists what hack/rootfs.sh makes of the binary.
func rootfs(t *testing.T, binary string) map[string]entry {
	dir := filepath.Join(t.TempDir(), "rootfs")
	out, err := exec.Command(filepath.Join(root, "hack", "rootfs.sh"), dir, binary).CombinedOutput()
	require.NoError(t, err, string(out))
	files := map[string]entry{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		e := entry{Mode: info.Mode() & fs.ModePerm}
		switch {
		case info.IsDir():
			e.Type = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			e.Type = "symlink"
			if e.Link, err = os.Readlink(path); err != nil {
				return err
			}
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.Type, e.SHA256 = "file", sha(b)
		}
		files[rel] = e
		return nil
	}))
	return files
}

func readFile(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(b)
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func sortedKeys(m map[string]entry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
