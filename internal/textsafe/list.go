package textsafe

// Distinct returns the distinct strings of list in the order they first appear, at most max
// of them (max <= 0: all), with how many distinct strings list holds and how many repeats it
// dropped. A list read from Redis may name one thing thousands of times (a workflow job's
// parents): shown as they are, they multiplied a 1.9 MB graph into a 54 MB page. Linear in
// len(list).
func Distinct(list []string, max int) (out []string, distinct, repeats int) {
	seen := make(map[string]struct{}, min(len(list), 1024))
	for _, s := range list {
		if _, ok := seen[s]; ok {
			repeats++
			continue
		}
		seen[s] = struct{}{}
		if max <= 0 || len(out) < max {
			out = append(out, s)
		}
	}
	return out, len(seen), repeats
}
