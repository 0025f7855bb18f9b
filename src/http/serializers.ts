import { createRequire } from "node:module";
import type { FastifyServerOptions } from "fastify";

type Compilers = NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;
type SerializerFactory = NonNullable<Compilers["buildSerializer"]>;
type SerializerCompiler = ReturnType<SerializerFactory>;
type Serializer = ReturnType<SerializerCompiler>;

/** Fastify's own serializer factory (fast-json-stringify), loaded the first time a response needs it. */
function fastifySerializers(): SerializerFactory {
  // Resolved from fastify's folder: it is fastify's dependency, whatever the install's layout.
  const fromFastify = createRequire(createRequire(import.meta.url).resolve("fastify"));
  return fromFastify("@fastify/fast-json-stringify-compiler")() as SerializerFactory;
}

/**
 * `compilersFactory.buildSerializer` for Fastify: the same fast-json-stringify serializers as
 * Fastify's default, each compiled when its route first sends that status, and the compiler
 * itself (fast-json-stringify and Ajv) loaded when the first one is. Fastify would load both
 * and compile every route's response schemas while the server starts.
 */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  let compiler: SerializerCompiler | null = null;
  return (route) => {
    let serialize: Serializer | null = null;
    return (data) => {
      compiler ??= fastifySerializers()(externalSchemas, options);
      serialize ??= compiler(route);
      return serialize(data);
    };
  };
};
