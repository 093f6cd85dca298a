/* placeholder: filled in by its owner */
typedef int ca_placeholder_trace;
