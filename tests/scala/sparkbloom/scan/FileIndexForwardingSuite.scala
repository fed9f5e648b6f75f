package sparkbloom.scan

import java.lang.reflect.{InvocationHandler, Method, Modifier, Proxy}

import scala.collection.mutable

import org.apache.spark.sql.execution.datasources.FileIndex
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.index.RowGroupSelection

/**
 * Every method of the running Spark's FileIndex except `listFiles` (where the pruning is) is answered by
 * the wrapped index: found by reflection, so a method a Spark line adds (4.3's `isTimeTravel`, whose
 * default would say "not time travel" for a wrapped time-travel index) is covered on that line.
 */
class FileIndexForwardingSuite extends AnyFunSuite {
  test("BloomSkippingFileIndex forwards every FileIndex method but listFiles to the index it wraps") {
    val calls = mutable.Buffer.empty[String]
    val delegate = Proxy.newProxyInstance(getClass.getClassLoader, Array[Class[_]](classOf[FileIndex]),
      new InvocationHandler {
        override def invoke(proxy: AnyRef, m: Method, args: Array[AnyRef]): AnyRef = m.getName match {
          case "equals" if m.getParameterCount == 1 => java.lang.Boolean.valueOf(proxy eq args(0))
          case "hashCode" if m.getParameterCount == 0 => Integer.valueOf(System.identityHashCode(proxy))
          case "toString" if m.getParameterCount == 0 => "stub FileIndex"
          case _ =>
            calls += m.getName
            m.getReturnType match {
              case java.lang.Boolean.TYPE => java.lang.Boolean.TRUE
              case java.lang.Long.TYPE => java.lang.Long.valueOf(42L)
              case _ => null
            }
        }
      }).asInstanceOf[FileIndex]
    val index = new BloomSkippingFileIndex(null, delegate, Nil, new RowGroupSelection(true), "t")
    val methods = classOf[FileIndex].getMethods.toSeq
      .filterNot(m => Modifier.isStatic(m.getModifiers))
      .filterNot(m => Set("listFiles", "toString")(m.getName))
    assert(methods.map(_.getName).toSet.contains("partitionSchema"))
    methods.foreach { m =>
      calls.clear()
      val result = m.invoke(index, m.getParameterTypes.map(_ => null: AnyRef): _*)
      assert(calls.toSeq == Seq(m.getName), s"$m is not forwarded")
      m.getReturnType match {
        case java.lang.Boolean.TYPE => assert(result == java.lang.Boolean.TRUE, m)
        case java.lang.Long.TYPE => assert(result == java.lang.Long.valueOf(42L), m)
        case _ =>
      }
    }
    info(s"FileIndex of Spark ${org.apache.spark.SPARK_VERSION}: ${methods.map(_.getName).sorted.mkString(", ")}")
  }
}
