package metrics

// SetBuildInfo registers relayq_build_info{version,goversion,commit} = 1, the
// usual way to ask Prometheus which build each instance runs. Call it once.
func (m *Metrics) SetBuildInfo(version, goversion, commit string) {
	g := gaugeVec("build_info",
		"Always 1; the labels say which build of relayq is running.", "version", "goversion", "commit")
	g.WithLabelValues(version, goversion, commit).Set(1)
	m.reg.MustRegister(g)
}
