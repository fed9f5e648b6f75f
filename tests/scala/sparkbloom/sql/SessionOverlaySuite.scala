package sparkbloom.sql

import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}

import org.apache.spark.sql.internal.SQLConf
import org.scalatest.funsuite.AnyFunSuite

/** Settings laid over a session's configuration while a write runs, and taken off after it. */
class SessionOverlaySuite extends AnyFunSuite {
  private val A = "parquet.bloom.filter.enabled#k"
  private val B = "parquet.bloom.filter.fpp#k"

  test("laid for the block, taken off after it, also when it throws") {
    val conf = new SQLConf
    val seen = SessionOverlay.during(conf, Seq(A -> "true", B -> "0.001"))(
      (conf.getConfString(A, null), conf.getConfString(B, null)))
    assert(seen == (("true", "0.001")))
    assert(!conf.contains(A) && !conf.contains(B))
    intercept[IllegalStateException](SessionOverlay.during(conf, Seq(A -> "true")) {
      assert(conf.getConfString(A) == "true"); throw new IllegalStateException("the write failed")
    })
    assert(!conf.contains(A) && SessionOverlay.laidOver(conf).isEmpty)
  }

  test("a key the session has is neither changed nor taken off") {
    val conf = new SQLConf
    conf.setConfString(A, "false")
    SessionOverlay.during(conf, Seq(A -> "true", B -> "0.01")) {
      assert(conf.getConfString(A) == "false" && conf.getConfString(B) == "0.01")
    }
    assert(conf.getConfString(A) == "false" && !conf.contains(B))
    // set by the user while laid: theirs stays
    SessionOverlay.during(conf, Seq(B -> "0.01"))(conf.setConfString(B, "0.2"))
    assert(conf.getConfString(B) == "0.2")
  }

  test("concurrent blocks on one session share a key: the last one out takes it off") {
    val conf = new SQLConf
    val pool = Executors.newFixedThreadPool(2)
    try {
      val inside = new CountDownLatch(1)
      val release = new CountDownLatch(1)
      val first = pool.submit(() =>
        SessionOverlay.during(conf, Seq(A -> "true")) {
          inside.countDown(); release.await(10, TimeUnit.SECONDS)
        })
      assert(inside.await(10, TimeUnit.SECONDS))
      SessionOverlay.during(conf, Seq(A -> "true"))(assert(conf.getConfString(A) == "true"))
      assert(conf.getConfString(A) == "true", "still laid: the first block has not ended")
      release.countDown()
      first.get(10, TimeUnit.SECONDS)
      assert(!conf.contains(A) && SessionOverlay.laidOver(conf).isEmpty)
    } finally pool.shutdownNow()
  }
}
