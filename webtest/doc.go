// Package webtest drives exq's dashboard (package web) in a real headless Chromium: see
// browser_test.go. It is a module of its own so that the core module never depends on
// chromedp.
//
//	cd webtest && go test ./...                                  # screenshots in a temp folder
//	cd webtest && go test ./... -screenshots ../docs/screenshots  # refresh the docs' screenshots
package webtest
