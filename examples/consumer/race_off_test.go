//go:build !race

package main

// raceBuild says the tests run with the race detector.
const raceBuild = false
