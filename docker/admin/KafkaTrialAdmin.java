// The Admin API calls confluent-kafka-python does not have (partition reassignment, a
// transactional.id's coordinator),
// made with Kafka's own Java client. kafka-trial compiles this with the host's JDK
// against the cluster's kafka-clients jar and runs it per call; it prints one JSON
// object on stdout, or an error on stderr and exits 1.
//
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP reassign TOPIC PARTITION 1,2,3
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP reassignments TOPIC
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP coordinator transaction|group ID
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP move TOPIC/P=1,2;TOPIC/Q=3,1
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP quorum
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP remove-voter ID DIRECTORY_ID
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP add-voter ID DIRECTORY_ID LISTENER HOST PORT
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP brokers
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP unregister ID

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;

public final class KafkaTrialAdmin {
    private static final java.util.Set<String> READS =
        java.util.Set.of("quorum", "brokers");

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println(
                "usage: KafkaTrialAdmin BOOTSTRAP COMMAND ... (see the source)");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        // A membership read that a broker can forward answers within a second; one
        // that cannot (cut off from the active controller) should fail fast, so that
        // the caller asks through the next broker instead of waiting out a change's
        // timeout: a voter change's waits under a partition were made of these.
        boolean read = READS.contains(args[1]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, read ? "4000" : "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, read ? "8000" : "20000");
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "reassign" -> reassign(admin, args[2], Integer.parseInt(args[3]), args[4]);
                case "reassignments" -> reassignments(admin, args[2]);
                case "coordinator" -> coordinator(admin, args[2], args[3]);
                case "move" -> move(admin, args[2]);
                case "quorum" -> Membership.quorum(admin);
                case "remove-voter" -> Membership.removeVoter(admin, args[2], args[3]);
                case "add-voter" -> Membership.addVoter(admin, args);
                case "brokers" -> Membership.brokers(admin);
                case "unregister" -> Membership.unregister(admin, args[2]);
                default -> {
                    System.err.println("unknown command " + args[1]);
                    System.exit(2);
                }
            }
        } catch (java.util.concurrent.ExecutionException e) {
            System.err.println(e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
            System.exit(1);
        }
    }

    private static void reassign(Admin admin, String topic, int partition, String replicas)
            throws Exception {
        List<Integer> target = new ArrayList<>();
        for (String r : replicas.split(",")) {
            target.add(Integer.parseInt(r.trim()));
        }
        TopicPartition tp = new TopicPartition(topic, partition);
        admin.alterPartitionReassignments(
                Map.of(tp, Optional.of(new NewPartitionReassignment(target))))
            .all().get(30, TimeUnit.SECONDS);
        System.out.println("{\"requested\":" + target + "}");
    }

    // Several partitions' reassignments in one request: a decommission moves every
    // replica a broker holds, and a JVM per partition would take minutes.
    private static void move(Admin admin, String spec) throws Exception {
        Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
        for (String one : spec.split(";")) {
            String[] kv = one.split("=", 2);
            int slash = kv[0].lastIndexOf('/');
            List<Integer> target = new ArrayList<>();
            for (String r : kv[1].split(",")) {
                target.add(Integer.parseInt(r.trim()));
            }
            TopicPartition tp = new TopicPartition(
                kv[0].substring(0, slash), Integer.parseInt(kv[0].substring(slash + 1)));
            moves.put(tp, Optional.of(new NewPartitionReassignment(target)));
        }
        admin.alterPartitionReassignments(moves).all().get(30, TimeUnit.SECONDS);
        System.out.println("{\"requested\":" + moves.size() + "}");
    }

    private static void reassignments(Admin admin, String topic) throws Exception {
        Map<TopicPartition, PartitionReassignment> all =
            admin.listPartitionReassignments().reassignments().get(30, TimeUnit.SECONDS);
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<TopicPartition, PartitionReassignment> e : all.entrySet()) {
            if (!e.getKey().topic().equals(topic)) {
                continue;
            }
            if (out.length() > 1) {
                out.append(',');
            }
            PartitionReassignment r = e.getValue();
            out.append('"').append(e.getKey().partition()).append("\":{\"replicas\":")
                .append(r.replicas()).append(",\"adding\":").append(r.addingReplicas())
                .append(",\"removing\":").append(r.removingReplicas()).append('}');
        }
        System.out.println(out.append('}'));
    }

    // Kafka's own answer to which broker coordinates a transactional.id or a group:
    // the broker the admin client's FindCoordinator found, and that answered.
    private static void coordinator(Admin admin, String kind, String id) throws Exception {
        int broker = switch (kind) {
            case "transaction" -> admin.describeTransactions(List.of(id)).description(id)
                .get(30, TimeUnit.SECONDS).coordinatorId();
            case "group" -> admin.describeConsumerGroups(List.of(id)).describedGroups().get(id)
                .get(30, TimeUnit.SECONDS).coordinator().id();
            default -> throw new IllegalArgumentException("unknown coordinator kind " + kind);
        };
        System.out.println("{\"coordinator\":" + broker + "}");
    }
}

// KRaft membership (KIP-853's dynamic quorum, Kafka 3.9+): the voter set read back,
// one voter removed or added, and brokers listed and unregistered. Every call goes to
// a broker, which forwards it to the active controller: the host reaches no
// controller listener. Reflection stands in for what 3.9's client lacks
// (describeCluster's fenced brokers, 4.0+), so the tool compiles against both.
final class Membership {
    private Membership() {}

    static void quorum(Admin admin) throws Exception {
        QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
        System.out.println("{\"leader\":" + q.leaderId() + ",\"epoch\":" + q.leaderEpoch()
            + ",\"voters\":" + replicas(q.voters()) + ",\"observers\":"
            + replicas(q.observers()) + ",\"hw\":" + q.highWatermark()
            + ",\"ends\":" + ends(q.voters()) + "}");
    }

    // Each voter's metadata log end offset as the leader last heard it (-1: unknown),
    // against the quorum's high watermark: whether every voter holds the whole log.
    private static String ends(List<QuorumInfo.ReplicaState> states) {
        StringBuilder out = new StringBuilder("{");
        for (QuorumInfo.ReplicaState r : states) {
            if (out.length() > 1) {
                out.append(',');
            }
            out.append('"').append(r.replicaId()).append("\":").append(r.logEndOffset());
        }
        return out.append('}').toString();
    }

    private static String replicas(List<QuorumInfo.ReplicaState> states) {
        StringBuilder out = new StringBuilder("{");
        for (QuorumInfo.ReplicaState r : states) {
            if (out.length() > 1) {
                out.append(',');
            }
            out.append('"').append(r.replicaId()).append("\":\"")
                .append(r.replicaDirectoryId()).append('"');
        }
        return out.append('}').toString();
    }

    static void removeVoter(Admin admin, String id, String dir) throws Exception {
        admin.removeRaftVoter(Integer.parseInt(id), Uuid.fromString(dir))
            .all().get(30, TimeUnit.SECONDS);
        System.out.println("{\"removed\":" + id + "}");
    }

    // add-voter ID DIRECTORY_ID LISTENER HOST PORT: the endpoint the other voters reach
    // the new one at, as they reach every voter, through their own proxies.
    static void addVoter(Admin admin, String[] args) throws Exception {
        RaftVoterEndpoint at = new RaftVoterEndpoint(args[4], args[5], Integer.parseInt(args[6]));
        admin.addRaftVoter(Integer.parseInt(args[2]), Uuid.fromString(args[3]), Set.of(at))
            .all().get(30, TimeUnit.SECONDS);
        System.out.println("{\"added\":" + args[2] + "}");
    }

    // Every registered broker with whether it is fenced; where the client cannot ask for
    // fenced brokers (before 4.0), only the unfenced ones, and "fenced" is null.
    static void brokers(Admin admin) throws Exception {
        DescribeClusterOptions options = new DescribeClusterOptions();
        boolean withFenced = true;
        try {
            DescribeClusterOptions.class.getMethod("includeFencedBrokers", boolean.class)
                .invoke(options, true);
        } catch (NoSuchMethodException e) {
            withFenced = false;
        }
        StringBuilder out = new StringBuilder("{");
        for (Node n : admin.describeCluster(options).nodes().get(30, TimeUnit.SECONDS)) {
            if (out.length() > 1) {
                out.append(',');
            }
            Object fenced = withFenced ? Node.class.getMethod("isFenced").invoke(n) : null;
            out.append('"').append(n.id()).append("\":").append(fenced);
        }
        System.out.println(out.append('}'));
    }

    static void unregister(Admin admin, String id) throws Exception {
        admin.unregisterBroker(Integer.parseInt(id)).all().get(30, TimeUnit.SECONDS);
        System.out.println("{\"unregistered\":" + id + "}");
    }
}
