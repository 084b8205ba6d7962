// Stand-in for the one member of org.apache.kafka.common.internals.Topic that Kafka 2.4.1's
// StateChangeLogMerger uses (benchmark only): the legal characters of a topic name.
package org.apache.kafka.common.internals;

public class Topic {
    public static final String LEGAL_CHARS = "[a-zA-Z0-9._-]";
}
