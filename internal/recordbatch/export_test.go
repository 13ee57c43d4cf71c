package recordbatch

// SetMaxDecompressed lowers the bound on a batch's decompressed records for a test and
// returns the function that restores it.
func SetMaxDecompressed(n int) (restore func()) {
	old := maxDecompressed
	maxDecompressed = n
	return func() { maxDecompressed = old }
}
