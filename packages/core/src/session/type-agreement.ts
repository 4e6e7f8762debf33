/** True when each of A and B is assignable to the other: a schema and the plain type declared for it agree. */
export type Agree<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Compiles only for `true`: `type _ = Assert<Agree<Plain, z.infer<typeof schema>>>` fails the build on drift. */
export type Assert<T extends true> = T;
