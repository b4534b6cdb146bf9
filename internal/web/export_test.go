package web

// Test helpers shared with the external test package (web_test), whose
// tests run against a real node.
var (
	FindBrowser = findBrowser
	RunBrowser  = runBrowser
	CheckText   = checkText
)
