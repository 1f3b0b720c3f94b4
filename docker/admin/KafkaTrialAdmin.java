// The Admin API calls confluent-kafka-python does not have (partition reassignment),
// made with Kafka's own Java client. kafka-trial compiles this with the host's JDK
// against the cluster's kafka-clients jar and runs it per call; it prints one JSON
// object on stdout, or an error on stderr and exits 1.
//
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP reassign TOPIC PARTITION 1,2,3
//   java -cp CLASSES:JARS/* KafkaTrialAdmin BOOTSTRAP reassignments TOPIC

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.common.TopicPartition;

public final class KafkaTrialAdmin {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: KafkaTrialAdmin BOOTSTRAP reassign|reassignments TOPIC ...");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "reassign" -> reassign(admin, args[2], Integer.parseInt(args[3]), args[4]);
                case "reassignments" -> reassignments(admin, args[2]);
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
}
