package chronos

import "net"

var metadataIP = net.ParseIP("169.254.169.254")

// IsMetadataIP reports whether ip is the cloud metadata address, which no
// target may ever reach.
func IsMetadataIP(ip net.IP) bool { return ip.Equal(metadataIP) }

// AllowedIP reports whether the executor may connect to ip. Private,
// loopback, link-local and unspecified addresses are refused unless
// allowPrivate is set; the metadata address is refused always.
func AllowedIP(ip net.IP, allowPrivate bool) bool {
	if IsMetadataIP(ip) {
		return false
	}
	if allowPrivate {
		return true
	}
	return !(ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsInterfaceLocalMulticast())
}
