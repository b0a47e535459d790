// Nothing to import: this target only adds ThreadSanitizer annotations to the test bundle
// (see mutex_annotations.c).
