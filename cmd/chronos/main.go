// Command chronos is the Chronos scheduler: serve, migrate, tap, receive, bench.
package main

func main() {}
