// A Kafka Streams application with exactly-once v2: every input record's value goes
// unchanged, under its own key, from INPUT_TOPIC to OUTPUT_TOPIC.
//
// Environment: KAFKA_BOOTSTRAP_SERVERS, INPUT_TOPIC, OUTPUT_TOPIC, GROUP_ID (the
// application.id, so also the consumer group), INSTANCE_ID (names the clients).
// SIGTERM closes the streams cleanly (exit 143, the JVM's code for it); an
// unrecoverable error exits 1 so that whatever supervises the app starts it again.

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class CopyApp {
  private static final Logger LOG = LoggerFactory.getLogger("copy-app");
  private static final Duration CLOSE_WITHIN = Duration.ofSeconds(30);

  private CopyApp() {}

  private static String env(String name) {
    String value = System.getenv(name);
    if (value == null || value.isEmpty()) {
      LOG.error("{} is not set", name);
      System.exit(2);
    }
    return value;
  }

  static Properties config(String group, String instance, String bootstrap) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, group);
    p.put(StreamsConfig.CLIENT_ID_CONFIG, group + "-" + instance);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    // Internal topics survive a broker loss like the input and output do.
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
    // Each commit ends a transaction: the output becomes visible to read_committed
    // readers this often.
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    // A crashed instance's partitions move after 10 s, not the default 45 s.
    p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
    return p;
  }

  public static void main(String[] args) throws InterruptedException {
    String bootstrap = env("KAFKA_BOOTSTRAP_SERVERS");
    String input = env("INPUT_TOPIC");
    String output = env("OUTPUT_TOPIC");
    String group = env("GROUP_ID");
    String instance = System.getenv().getOrDefault("INSTANCE_ID", "0");

    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .mapValues(value -> value)
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
    KafkaStreams streams = new KafkaStreams(builder.build(), config(group, instance, bootstrap));

    AtomicBoolean closing = new AtomicBoolean(false);
    CountDownLatch failed = new CountDownLatch(1);
    // A stream thread that dies of an error is replaced; EOS v2 fences what it left.
    streams.setUncaughtExceptionHandler(
        e -> {
          LOG.warn("stream thread failed; replacing it", e);
          return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
    streams.setStateListener(
        (now, before) -> {
          if (now == KafkaStreams.State.ERROR) {
            failed.countDown();
          }
        });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  if (closing.compareAndSet(false, true)) {
                    LOG.info("SIGTERM: closing");
                    streams.close(CLOSE_WITHIN);
                    LOG.info("closed");
                  }
                },
                "shutdown"));

    LOG.info("copying {} -> {} as application {}", input, output, group);
    streams.start();
    failed.await();
    if (closing.compareAndSet(false, true)) {
      LOG.error("Kafka Streams is in state ERROR; exiting");
      streams.close(CLOSE_WITHIN);
      System.exit(1);
    }
  }
}
