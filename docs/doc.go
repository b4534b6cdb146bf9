// Package docs holds rest.area's documentation pages (Markdown, beside
// this file) and the test that checks them: every relative link and
// anchor resolves, every file the code-reading pages name exists, every
// citation of docs/contract.md in Go comments names a section that
// exists, and the README stays short.
package docs
