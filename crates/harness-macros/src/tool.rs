//! `#[tool]`: a plain function in, the function plus a `Tool` implementation out.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned as _;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, ItemFn, LitBool, LitStr, Pat, PathArguments,
    ReturnType, Type, TypePath,
};

use crate::docs::{doc_text, parameter_docs};

/// What `#[tool(...)]` was given.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    requires_approval: bool,
    /// `timeout_secs = N`, in milliseconds.
    timeout_ms: Option<u64>,
    krate: Option<syn::Path>,
}

impl Options {
    fn parse(attr: TokenStream) -> syn::Result<Self> {
        let mut options = Self::default();
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("name") {
                options.name = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("description") {
                options.description = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("requires_approval") {
                options.requires_approval = if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<LitBool>()?.value
                } else {
                    true
                };
            } else if meta.path.is_ident("timeout_secs") {
                options.timeout_ms = Some(timeout_ms(&meta.value()?.parse()?)?);
            } else if meta.path.is_ident("crate") {
                options.krate = Some(meta.value()?.parse()?);
            } else {
                return Err(meta.error(
                    "unknown #[tool] option; expected `name = \"...\"`, `description = \"...\"`, \
                     `requires_approval`, `timeout_secs = N` or `crate = path`",
                ));
            }
            Ok(())
        });
        syn::parse::Parser::parse2(parser, attr)?;
        Ok(options)
    }
}

/// `timeout_secs`'s value (`30`, `2.5`) in whole milliseconds, at least one.
fn timeout_ms(literal: &syn::Lit) -> syn::Result<u64> {
    let seconds = match literal {
        syn::Lit::Int(int) => int.base10_parse::<f64>()?,
        syn::Lit::Float(float) => float.base10_parse::<f64>()?,
        _ => {
            return Err(syn::Error::new(
                literal.span(),
                "expected a number of seconds",
            ));
        }
    };
    let millis = (seconds * 1000.0).round();
    if !(1.0..=1e15).contains(&millis) {
        return Err(syn::Error::new(
            literal.span(),
            "a tool's timeout must be at least 1 ms (0.001 s); leave it out for no timeout",
        ));
    }
    // In range and whole, checked above.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(millis as u64)
}

/// How one function parameter reaches the function.
enum Param {
    /// Filled by the runtime: `Ctx` (by value) or `&Ctx`.
    Ctx { by_ref: bool },
    /// Read from the model's arguments.
    Argument(Box<Argument>),
}

struct Argument {
    ident: Ident,
    /// The JSON name: the identifier without `r#`.
    name: String,
    /// The type the argument is deserialised as.
    owned: Type,
    /// The type whose schema describes it (`T` for `Option<T>`).
    schema: Type,
    /// Lent to the function (`&str`, `&[T]`, `&T` parameters).
    by_ref: bool,
    optional: bool,
    default: Option<Expr>,
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let Ok(mut function) = syn::parse2::<ItemFn>(item) else {
        let error = syn::Error::new(
            Span::call_site(),
            "#[tool] goes on a function: `fn` or `async fn`",
        );
        return error.to_compile_error();
    };
    match Options::parse(attr).and_then(|options| generate(&mut function, &options)) {
        Ok(tokens) => tokens,
        Err(error) => {
            // Keep the function so the one real error is not buried under "not found" ones.
            strip_param_attributes(&mut function);
            let error = error.to_compile_error();
            quote! { #error #function }
        }
    }
}

fn generate(function: &mut ItemFn, options: &Options) -> syn::Result<TokenStream> {
    check_signature(function)?;
    let params = read_params(function)?;
    strip_param_attributes(function);

    let fn_ident = function.sig.ident.clone();
    let vis = function.vis.clone();
    let krate = crate_path(options.krate.as_ref());
    let tool_name = tool_name(options, &fn_ident)?;
    let doc = doc_text(&function.attrs);
    let description = options
        .description
        .as_ref()
        .map_or_else(|| doc.clone(), LitStr::value);
    let requires_approval = options.requires_approval;
    let timeout = options.timeout_ms.map(|ms| {
        quote! { .with_timeout(::std::time::Duration::from_millis(#ms)) }
    });
    let struct_ident = Ident::new(&pascal_case(&fn_ident.unraw().to_string()), fn_ident.span());

    let arguments = ArgumentCode::new(&params, &doc, &krate);
    let ArgumentCode {
        fields,
        default_fns,
        schema_calls,
        idents,
        serde_crate,
    } = &arguments;
    let invoke = invoke_code(function, &params, &krate, &tool_name);
    let struct_doc = format!(
        "The [`{fn_ident}`] function as a tool named `{tool_name}`: register this with a \
         `Toolbox` or an agent."
    );

    Ok(quote! {
        #function

        #[doc = #struct_doc]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #vis struct #struct_ident;

        const _: () = {
            #[derive(#krate::__private::serde::Deserialize)]
            #[serde(crate = #serde_crate)]
            #[allow(non_camel_case_types, non_snake_case)]
            struct __ToolArguments {
                #(#fields,)*
            }

            #(#default_fns)*

            #[#krate::__private::async_trait]
            impl #krate::__private::Tool for #struct_ident {
                fn spec(&self) -> &::std::sync::Arc<#krate::__private::ToolSpec> {
                    // Built on first use, then shared: a schema is not rebuilt per call, and
                    // every toolbox holding the tool holds this one spec.
                    static SPEC: ::std::sync::OnceLock<
                        ::std::sync::Arc<#krate::__private::ToolSpec>,
                    > = ::std::sync::OnceLock::new();
                    SPEC.get_or_init(|| {
                        let mut __params = #krate::__private::ParametersBuilder::new();
                        #(#schema_calls)*
                        ::std::sync::Arc::new(
                            #krate::__private::ToolSpec::new(#tool_name, #description, __params.build())
                                .with_requires_approval(#requires_approval)
                                #timeout
                        )
                    })
                }

                async fn call(
                    &self,
                    __arguments: #krate::__private::serde_json::Value,
                    __ctx: #krate::__private::Ctx,
                ) -> #krate::__private::Result<#krate::__private::Content> {
                    let __ToolArguments { #(#idents),* } =
                        #krate::__private::parse_args::<__ToolArguments>(#tool_name, __arguments)?;
                    let __text: #krate::__private::Result<::std::string::String> = { #invoke };
                    __text.map(#krate::__private::Content::Text)
                }
            }
        };
    })
}

/// The tool's name: the override, else the function's; checked against what vendors accept.
fn tool_name(options: &Options, fn_ident: &Ident) -> syn::Result<String> {
    if let Some(lit) = &options.name {
        check_tool_name(&lit.value(), lit.span())?;
        return Ok(lit.value());
    }
    let name = fn_ident.unraw().to_string();
    check_tool_name(&name, fn_ident.span())?;
    Ok(name)
}

/// The code for the model's arguments: the struct they are read into, its default
/// functions, and the schema, one parameter at a time in the function's order.
struct ArgumentCode {
    fields: Vec<TokenStream>,
    default_fns: Vec<TokenStream>,
    schema_calls: Vec<TokenStream>,
    idents: Vec<Ident>,
    serde_crate: LitStr,
}

impl ArgumentCode {
    fn new(params: &[Param], doc: &str, krate: &TokenStream) -> Self {
        let arguments: Vec<&Argument> = params
            .iter()
            .filter_map(|p| match p {
                Param::Argument(a) => Some(a.as_ref()),
                Param::Ctx { .. } => None,
            })
            .collect();
        let names: Vec<String> = arguments.iter().map(|a| a.name.clone()).collect();
        let docs = parameter_docs(doc, &names);
        let mut code = Self {
            fields: Vec::new(),
            default_fns: Vec::new(),
            schema_calls: Vec::new(),
            idents: arguments.iter().map(|a| a.ident.clone()).collect(),
            serde_crate: LitStr::new(
                &format!("{}::__private::serde", path_string(krate)),
                Span::call_site(),
            ),
        };
        for argument in arguments {
            let Argument {
                ident,
                name,
                owned,
                schema,
                ..
            } = argument;
            let description = if let Some(text) = docs.get(name) {
                quote!(::core::option::Option::Some(#text))
            } else {
                quote!(::core::option::Option::None)
            };
            if let Some(default) = &argument.default {
                let default_fn = format_ident!("__default_{}", ident.unraw());
                let default_path = LitStr::new(&default_fn.to_string(), Span::call_site());
                let value = default_value(default, owned);
                code.fields
                    .push(quote! { #[serde(default = #default_path)] #ident: #owned });
                code.default_fns.push(quote! {
                    #[allow(non_snake_case, clippy::unnecessary_wraps)]
                    fn #default_fn() -> #owned { #value }
                });
                code.schema_calls.push(quote! {
                    __params.param_with_default::<#owned>(#name, #description, &#default_fn());
                });
            } else {
                let required = !argument.optional;
                code.fields.push(quote! { #ident: #owned });
                code.schema_calls.push(quote! {
                    __params.param::<#schema>(#name, #description, #required);
                });
            }
        }
        code
    }
}

/// The code that calls the function with the arguments and the context, and renders what
/// it returns; a plain `fn` goes to the blocking pool.
fn invoke_code(
    function: &ItemFn,
    params: &[Param],
    krate: &TokenStream,
    tool_name: &str,
) -> TokenStream {
    let fn_ident = &function.sig.ident;
    let call_args: Vec<TokenStream> = params
        .iter()
        .map(|p| match p {
            Param::Ctx { by_ref: true } => quote!(&__ctx),
            Param::Ctx { by_ref: false } => quote!(::core::clone::Clone::clone(&__ctx)),
            Param::Argument(a) => {
                let ident = &a.ident;
                if a.by_ref {
                    quote!(&#ident)
                } else {
                    quote!(#ident)
                }
            }
        })
        .collect();
    let uses_ctx = params.iter().any(|p| matches!(p, Param::Ctx { .. }));
    let ignore_ctx = if uses_ctx {
        quote!()
    } else {
        quote!(let _ = &__ctx;)
    };
    let render = render_output(&function.sig.output, krate, tool_name);
    if function.sig.asyncness.is_some() {
        quote! {
            #ignore_ctx
            let __out = #fn_ident(#(#call_args),*).await;
            #render
        }
    } else {
        quote! {
            #ignore_ctx
            #krate::__private::run_blocking(#tool_name, move || {
                let __out = #fn_ident(#(#call_args),*);
                #render
            })
            .await
        }
    }
}

/// Refuses what cannot be a tool, pointing at the token that makes it so.
fn check_signature(function: &ItemFn) -> syn::Result<()> {
    let sig = &function.sig;
    if let Some(receiver) = sig.receiver() {
        return Err(syn::Error::new_spanned(
            receiver,
            "#[tool] cannot take `self`: a tool is called with the model's JSON arguments and \
             nothing else. Put #[tool] on a free function (reach shared state through a `Ctx` \
             parameter), or implement `Tool` for your type by hand",
        ));
    }
    if let Some(param) = sig.generics.params.first() {
        return Err(syn::Error::new_spanned(
            param,
            "#[tool] cannot be generic: the model's JSON arguments must be read into one \
             concrete type per parameter, and the schema must describe it. Replace the \
             generic parameter with a concrete type",
        ));
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        return Err(syn::Error::new_spanned(
            where_clause,
            "#[tool] cannot have a `where` clause: a tool's parameter types must be concrete",
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        return Err(syn::Error::new(
            unsafety.span(),
            "#[tool] cannot be an `unsafe fn`: the runtime would call it with whatever the \
             model sends, so it must be safe for any input. Make the function safe and keep \
             the `unsafe` block inside it",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "#[tool] cannot be variadic: each parameter must have a name and a type",
        ));
    }
    Ok(())
}

fn read_params(function: &ItemFn) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    for input in &function.sig.inputs {
        let FnArg::Typed(typed) = input else {
            continue; // a receiver was refused already
        };
        let ident = match typed.pat.as_ref() {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "#[tool] parameters must be plain names: the name becomes the JSON field \
                     the model fills in. Write `point: Point` and destructure it in the body",
                ));
            }
        };
        let default = take_default(&typed.attrs)?;
        if let Some(by_ref) = ctx_param(&typed.ty) {
            if default.is_some() {
                return Err(syn::Error::new(
                    typed.ty.span(),
                    "a `Ctx` parameter is filled in by the runtime and cannot take #[default]",
                ));
            }
            params.push(Param::Ctx { by_ref });
            continue;
        }
        check_no_impl_trait(&typed.ty)?;
        let (owned, by_ref) = owned_type(&typed.ty)?;
        let option_inner = option_inner(&owned).cloned();
        if let Some(inner) = &option_inner {
            if matches!(inner, Type::Reference(_)) {
                return Err(syn::Error::new(
                    inner.span(),
                    "#[tool] cannot read a borrowed value inside `Option`: write \
                     `Option<String>` (or another owned type) instead",
                ));
            }
            if default.is_some() {
                return Err(syn::Error::new(
                    typed.ty.span(),
                    "an `Option` parameter already defaults to `None`: drop #[default], or \
                     make the type plain and keep the default",
                ));
            }
        }
        params.push(Param::Argument(Box::new(Argument {
            name: ident.unraw().to_string(),
            ident,
            schema: option_inner.clone().unwrap_or_else(|| owned.clone()),
            owned,
            by_ref,
            optional: option_inner.is_some(),
            default,
        })));
    }
    Ok(params)
}

/// The expression of a `#[default(expr)]` parameter attribute, if any.
fn take_default(attrs: &[Attribute]) -> syn::Result<Option<Expr>> {
    let mut found = None;
    for attr in attrs {
        if attr.path().is_ident("default") {
            if found.is_some() {
                return Err(syn::Error::new(
                    attr.span(),
                    "a parameter takes one #[default(...)]",
                ));
            }
            found = Some(attr.parse_args::<Expr>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "write the default as #[default(expression)], for example #[default(3)]",
                )
            })?);
        }
    }
    Ok(found)
}

/// Removes the parameter attributes the macro consumed, which rustc would not know.
fn strip_param_attributes(function: &mut ItemFn) {
    for input in &mut function.sig.inputs {
        if let FnArg::Typed(typed) = input {
            typed.attrs.retain(|a| !a.path().is_ident("default"));
        }
    }
}

/// `Some(by_ref)` when the type is `Ctx` or `&Ctx` (under any path).
fn ctx_param(ty: &Type) -> Option<bool> {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => ctx_param(&r.elem).map(|_| true),
        Type::Path(TypePath { qself: None, path }) => {
            let last = path.segments.last()?;
            (last.ident == "Ctx" && last.arguments.is_none()).then_some(false)
        }
        Type::Group(g) => ctx_param(&g.elem),
        _ => None,
    }
}

fn check_no_impl_trait(ty: &Type) -> syn::Result<()> {
    struct Finder(Option<Span>);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, node: &'ast syn::TypeImplTrait) {
            self.0.get_or_insert(node.span());
        }
    }
    let mut finder = Finder(None);
    syn::visit::Visit::visit_type(&mut finder, ty);
    match finder.0 {
        Some(span) => Err(syn::Error::new(
            span,
            "#[tool] parameters cannot be `impl Trait`: the model's JSON must be read into a \
             concrete type. Name the type",
        )),
        None => Ok(()),
    }
}

/// The owned type an argument is read as, and whether the function borrows it.
fn owned_type(ty: &Type) -> syn::Result<(Type, bool)> {
    match ty {
        Type::Reference(r) => {
            if let Some(m) = &r.mutability {
                return Err(syn::Error::new(
                    m.span(),
                    "#[tool] cannot pass `&mut`: the arguments are the model's, read fresh \
                     for each call. Take the value (or `&T`) instead",
                ));
            }
            let owned: Type = match r.elem.as_ref() {
                Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => {
                    syn::parse_quote!(::std::string::String)
                }
                Type::Slice(slice) => {
                    let elem = &slice.elem;
                    syn::parse_quote!(::std::vec::Vec<#elem>)
                }
                other => other.clone(),
            };
            Ok((owned, true))
        }
        Type::Group(g) => owned_type(&g.elem),
        other => Ok((other.clone(), false)),
    }
}

/// `T` when the type is `Option<T>` (under any path).
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(TypePath { qself: None, path }) = ty else {
        return None;
    };
    let last = path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(inner) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}

/// A default expression as a value of the parameter's type; a string literal is converted
/// so `#[default("metric")]` works for a `String` parameter.
fn default_value(default: &Expr, ty: &Type) -> TokenStream {
    match default {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        }) => quote_spanned!(default.span()=> <#ty as ::core::convert::From<&str>>::from(#default)),
        other => quote_spanned!(other.span()=> #other),
    }
}

/// Code that turns `__out` into `Result<String>`.
fn render_output(output: &ReturnType, krate: &TokenStream, tool_name: &str) -> TokenStream {
    let render_value = |value: TokenStream| {
        quote! {{
            #[allow(unused_imports)]
            use #krate::__private::{RenderDisplay as _, RenderSerialize as _, RenderUnit as _};
            (&&&#krate::__private::Render(#value)).render()
        }}
    };
    let returns_result = match output {
        ReturnType::Type(_, ty) => is_result(ty),
        ReturnType::Default => false,
    };
    if returns_result {
        let ok = render_value(quote!(__value));
        quote! {
            match __out {
                ::core::result::Result::Ok(__value) => #ok,
                ::core::result::Result::Err(__error) => {
                    #[allow(unused_imports)]
                    use #krate::__private::{FailureCore as _, FailureDisplay as _};
                    ::core::result::Result::Err(
                        (&&#krate::__private::Failure::new(__error, #tool_name)).take_error(),
                    )
                }
            }
        }
    } else {
        render_value(quote!(__out))
    }
}

/// True for `Result<..>` under any path (`std::io::Result<T>`, `anyhow::Result<T>`, ...).
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(TypePath { qself: None, path }) => path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Result" && !s.arguments.is_none()),
        Type::Group(g) => is_result(&g.elem),
        Type::Paren(p) => is_result(&p.elem),
        _ => false,
    }
}

/// Tool names every vendor accepts: 1 to 64 of `[a-zA-Z0-9_-]`.
fn check_tool_name(name: &str, span: Span) -> syn::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            format!(
                "tool name `{name}` would be refused by model vendors: use 1 to 64 ASCII \
                 letters, digits, `_` or `-` (set one with #[tool(name = \"...\")])"
            ),
        ))
    }
}

fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect::<String>()
            })
        })
        .collect()
}

/// The path of the runtime crate the generated code names.
fn crate_path(explicit: Option<&syn::Path>) -> TokenStream {
    use proc_macro_crate::{FoundCrate, crate_name};
    if let Some(path) = explicit {
        return quote!(#path);
    }
    let found = |package: &str, lib: &str| match crate_name(package) {
        // Inside harness-core itself (its tests and doctests) `::harness_core` still
        // resolves, through `extern crate self as harness_core`.
        Ok(FoundCrate::Itself) => Some(Ident::new(lib, Span::call_site())),
        Ok(FoundCrate::Name(n)) => Some(Ident::new(
            &extern_name(&n, package, lib),
            Span::call_site(),
        )),
        Err(_) => None,
    };
    let ident = found("deepharness-core", "harness_core")
        .or_else(|| found("deepharness", "deepharness"))
        .unwrap_or_else(|| Ident::new("deepharness", Span::call_site()));
    quote!(::#ident)
}

/// The name code uses for a dependency that `proc-macro-crate` found as `found`: a
/// dependency under its own package name is known by its library's name (`deepharness-core`
/// is imported as `harness_core`); a renamed one (`core = { package = "deepharness-core" }`)
/// by its key.
pub(crate) fn extern_name(found: &str, package: &str, lib: &str) -> String {
    if found == package.replace('-', "_") {
        lib.to_owned()
    } else {
        found.to_owned()
    }
}

/// A path as source text without spaces, for `#[serde(crate = "...")]`.
fn path_string(path: &TokenStream) -> String {
    path.to_string().replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_is_named_by_its_library_unless_renamed() {
        assert_eq!(
            extern_name("deepharness_core", "deepharness-core", "harness_core"),
            "harness_core"
        );
        assert_eq!(
            extern_name("harness_core", "deepharness-core", "harness_core"),
            "harness_core"
        );
        assert_eq!(
            extern_name("agents", "deepharness-core", "harness_core"),
            "agents"
        );
        assert_eq!(
            extern_name("deepharness", "deepharness", "deepharness"),
            "deepharness"
        );
    }

    #[test]
    fn pascal_case_joins_the_words() {
        assert_eq!(pascal_case("get_weather"), "GetWeather");
        assert_eq!(pascal_case("add"), "Add");
        assert_eq!(pascal_case("read_2_files"), "Read2Files");
        assert_eq!(pascal_case("already_HTTP"), "AlreadyHTTP");
    }

    #[test]
    fn tool_names_are_checked_against_what_vendors_accept() {
        assert!(check_tool_name("get_weather-2", Span::call_site()).is_ok());
        assert!(check_tool_name("", Span::call_site()).is_err());
        assert!(check_tool_name("has space", Span::call_site()).is_err());
        assert!(check_tool_name(&"a".repeat(65), Span::call_site()).is_err());
    }
}
