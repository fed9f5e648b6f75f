package sparkbloom.sql

import java.lang.reflect.{InvocationHandler, Method, Modifier, Proxy}

import scala.collection.mutable

import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.scalatest.funsuite.AnyFunSuite

/**
 * Every method of the running Spark's ParserInterface, abstract or default, inherited ones included, is
 * forwarded by BloomSqlParser to Spark's parser with the same arguments. Found by reflection, so it
 * covers what each Spark line adds (`parseRoutineParam` in 4.0, `parsePlanWithParameters` in 4.1,
 * `splitStatements` and `parseTemporalTableIdentifier` in 4.3) and fails on a method a new Spark adds
 * with a default body the shims do not forward (such a default would drop what it does not pass on:
 * 4.1's `parsePlanWithParameters` default drops the bound parameters).
 */
class BloomSqlParserForwardingSuite extends AnyFunSuite {
  private def recorder[T](iface: Class[T], calls: mutable.Buffer[(String, Seq[AnyRef])]): T =
    Proxy.newProxyInstance(getClass.getClassLoader, Array[Class[_]](iface),
      new InvocationHandler {
        override def invoke(proxy: AnyRef, m: Method, args: Array[AnyRef]): AnyRef = m.getName match {
          // java.lang.Object's methods (the assertions compare arguments): identity, not recorded
          case "equals" if m.getParameterCount == 1 => java.lang.Boolean.valueOf(proxy eq args(0))
          case "hashCode" if m.getParameterCount == 0 => Integer.valueOf(System.identityHashCode(proxy))
          case "toString" if m.getParameterCount == 0 => s"stub ${iface.getSimpleName}"
          case _ =>
            calls += m.getName -> Option(args).map(_.toSeq).getOrElse(Nil)
            null
        }
      }).asInstanceOf[T]

  /** Some instance of an interface, for arguments whose value only has to be passed on. */
  private def stub(iface: Class[_]): AnyRef = recorder(iface, mutable.Buffer.empty).asInstanceOf[AnyRef]

  private val methods: Seq[Method] =
    classOf[ParserInterface].getMethods.toSeq.filterNot(m => Modifier.isStatic(m.getModifiers)).sortBy(_.getName)

  test("this Spark's ParserInterface has the methods every line has") {
    val names = methods.map(_.getName).toSet
    assert(Set("parsePlan", "parseQuery", "parseExpression", "parseTableIdentifier", "parseFunctionIdentifier",
      "parseMultipartIdentifier", "parseTableSchema", "parseDataType").subsetOf(names), names)
    info(s"ParserInterface of Spark ${org.apache.spark.SPARK_VERSION}: ${names.toSeq.sorted.mkString(", ")}")
  }

  test("every method, abstract or default, reaches Spark's parser with its arguments unchanged") {
    val calls = mutable.Buffer.empty[(String, Seq[AnyRef])]
    val parser = new BloomSqlParser(recorder(classOf[ParserInterface], calls))
    methods.foreach { m =>
      calls.clear()
      val args: Seq[AnyRef] = m.getParameterTypes.toSeq.map {
        case c if c == classOf[String] => s"SELECT 1 AS ${m.getName}": AnyRef
        case c if c.isInterface => stub(c) // e.g. 4.1's ParameterContext
        case c => fail(s"$m: no test argument for a parameter of type $c: extend this test")
      }
      m.invoke(parser, args: _*)
      assert(calls.toSeq == Seq(m.getName -> args), s"$m was not forwarded as it is: the delegate saw $calls")
    }
  }

  test("a bloom-index statement is the parser's own, whichever method parses the whole statement") {
    val calls = mutable.Buffer.empty[(String, Seq[AnyRef])]
    val parser = new BloomSqlParser(recorder(classOf[ParserInterface], calls))
    val plan = parser.parsePlan("DROP BLOOM INDEX i ON t")
    assert(plan.getClass.getName.startsWith("sparkbloom."), plan)
    assert(calls.isEmpty)
    // 4.1+: parsePlanWithParameters, which spark.sql(text, args) calls, parses it the same way.
    methods.find(_.getName == "parsePlanWithParameters").foreach { m =>
      val viaParams = m.invoke(parser, Seq[AnyRef]("DROP BLOOM INDEX i ON t", stub(m.getParameterTypes()(1))): _*)
      assert(viaParams == plan)
      assert(calls.isEmpty)
    }
  }
}
