package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root: the test runs in docs/.
const root = ".."

// maxReadmeLines bounds README.md: it is for users, the rest is in docs/.
const maxReadmeLines = 260

// mdLines returns the lines of a Markdown file outside fenced code blocks.
func mdLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fence := ""
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		out = append(out, line)
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	inlineMD = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// links returns the link targets of a Markdown file (code left out).
func links(t *testing.T, file string) []string {
	var out []string
	for _, line := range mdLines(t, file) {
		line = codeSpan.ReplaceAllStringFunc(line, func(s string) string {
			// Keep the text of a code span that is a link's text.
			return strings.Trim(s, "`")
		})
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// slug is GitHub's anchor for a heading's text.
func slug(text string) string {
	text = inlineMD.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings, numbered as
// GitHub numbers repeated ones.
func anchors(t *testing.T, file string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range mdLines(t, file) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// checkedPages is README.md, CONTRIBUTING.md, docs/*.md and every other
// Markdown file README.md links to, as slash paths from the root.
func checkedPages(t *testing.T) []string {
	pages := []string{"README.md", "CONTRIBUTING.md"}
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		pages = append(pages, "docs/"+d)
	}
	have := map[string]bool{}
	for _, p := range pages {
		have[p] = true
	}
	for _, l := range links(t, "README.md") {
		target, _, _ := strings.Cut(l, "#")
		if isExternal(l) || !strings.HasSuffix(target, ".md") {
			continue
		}
		p := path.Clean(target)
		if !have[p] && exists(p) {
			have[p] = true
			pages = append(pages, p)
		}
	}
	return pages
}

func isExternal(link string) bool {
	return strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:")
}

func exists(slashPath string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(slashPath)))
	return err == nil
}

// TestLinks checks that every relative link of the checked pages names a
// file or directory in the repository and, with an #anchor into a
// Markdown file, a heading of that file.
func TestLinks(t *testing.T) {
	for _, page := range checkedPages(t) {
		for _, l := range links(t, page) {
			if isExternal(l) {
				continue
			}
			target, anchor, _ := strings.Cut(l, "#")
			file := page
			if target != "" {
				if strings.HasPrefix(target, "/") {
					t.Errorf("%s: link %q: use a path relative to the page", page, l)
					continue
				}
				file = path.Clean(path.Join(path.Dir(page), target))
				if strings.HasPrefix(file, "../") || file == ".." {
					t.Errorf("%s: link %q leaves the repository", page, l)
					continue
				}
				if !exists(file) {
					t.Errorf("%s: link %q: %s does not exist", page, l, file)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if !anchors(t, file)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", page, l, file, anchor)
			}
		}
	}
}

// pathLike is a code span that names a file or directory of the
// repository: no spaces or URL or placeholder characters, and a slash or
// a .go name.
func pathLike(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t{}*<>=?&()$:@,") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "-") {
		return false
	}
	if !strings.Contains(s, "/") {
		// A bare name: a Go file of the root package. (A bare DESIGN.md
		// names no one file.)
		return strings.HasSuffix(s, ".go")
	}
	first, _, _ := strings.Cut(s, "/")
	// A first segment with a dot is a host (github.com/...) unless it is
	// a dot-directory such as .ci.
	return !strings.Contains(first, ".") || strings.HasPrefix(first, ".")
}

// TestNamedPathsExist checks that every repository path the code-reading
// pages name in backticks exists.
func TestNamedPathsExist(t *testing.T) {
	for _, page := range []string{"docs/write-path.md", "docs/layout.md"} {
		seen := map[string]bool{}
		for _, line := range mdLines(t, page) {
			for _, span := range codeSpan.FindAllString(line, -1) {
				p := strings.TrimSpace(strings.Trim(span, "`"))
				if !pathLike(p) || seen[p] {
					continue
				}
				seen[p] = true
				if !exists(strings.TrimSuffix(p, "/")) {
					t.Errorf("%s names `%s`, which does not exist", page, p)
				}
			}
		}
	}
}

var (
	contractSection = regexp.MustCompile(`^## (\d+)\. `)
	sectionRef      = regexp.MustCompile(`§§?(\d+)(?:\s*[–-]\s*§?(\d+))?`)
	oldCite         = regexp.MustCompile(`SPEC sections? \d`)
)

// TestContractCitations checks that every citation of docs/contract.md in
// Go comments names a section the contract has, and that no comment cites
// the specification by its old name instead.
func TestContractCitations(t *testing.T) {
	sections := map[string]bool{}
	for _, line := range mdLines(t, "docs/contract.md") {
		if m := contractSection.FindStringSubmatch(line); m != nil {
			sections[m[1]] = true
		}
	}
	if len(sections) == 0 {
		t.Fatal("docs/contract.md has no numbered sections (## N. Title)")
	}
	cites := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, p)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for n := 1; sc.Scan(); n++ {
			_, comment, ok := strings.Cut(sc.Text(), "//")
			if !ok || rel == filepath.Join("docs", "docs_test.go") {
				continue
			}
			if oldCite.MatchString(comment) {
				t.Errorf("%s:%d cites the SPEC; cite docs/contract.md §N instead", rel, n)
			}
			// Every § on a line that names the contract is one of its
			// sections: "docs/contract.md §2, §3 or §8", "§§2–5".
			_, cite, ok := strings.Cut(comment, "docs/contract.md")
			if !ok {
				continue
			}
			for _, m := range sectionRef.FindAllStringSubmatch(cite, -1) {
				cites++
				for _, s := range m[1:] {
					if s != "" && !sections[s] {
						t.Errorf("%s:%d cites docs/contract.md §%s, which does not exist", rel, n, s)
					}
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d citations of docs/contract.md", cites)
}

// TestReadmeIsShort keeps README.md to what a user needs first.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; keep it to %d and move the rest to docs/", n, maxReadmeLines)
	}
}
