// Package kubernetes holds the kustomize base that runs rest.area as a
// StatefulSet (kubectl apply -k deploy/kubernetes) and its tests: every
// manifest decodes strictly into the Kubernetes API types, and a docker
// simulation runs the pods the StatefulSet describes, with their
// arguments, environment and DNS names, through a kill and a rolling
// restart. It is a module of its own so that k8s.io/api stays out of the
// main module's dependencies.
package kubernetes
